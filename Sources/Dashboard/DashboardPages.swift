import Foundation
import JobctlCore
import Mustache
import Queue

/// The dashboard's pages: Mustache templates (`Templates/`, embedded in the binary) filled from
/// the views below. Mustache escapes every `{{value}}` for HTML; no template uses the unescaped
/// form, so nothing a job holds (an input path, an error message) can inject markup.
public struct DashboardPages: Sendable {
    let library: MustacheLibrary

    public init() {
        var library = MustacheLibrary()
        let templates: [(String, [UInt8])] = [
            ("layout", PackageResources.layout_mustache),
            ("signin", PackageResources.signin_mustache),
            ("jobs", PackageResources.jobs_mustache),
            ("job", PackageResources.job_mustache),
            ("message", PackageResources.message_mustache),
            ("fleet", PackageResources.fleet_mustache),
            ("confirm", PackageResources.confirm_mustache),
        ]
        for (name, bytes) in templates {
            // The templates are ours and parsed by the tests: a parse failure is a build defect.
            do { try library.register(String(decoding: bytes, as: UTF8.self), named: name) } catch {
                preconditionFailure("the dashboard template \(name) does not parse: \(error)")
            }
        }
        self.library = library
    }

    /// The page `name` filled from `view`.
    /// The page of `view`. What tenants sent (paths, names, messages) is escaped for HTML by the
    /// templates, and its invisible reordering marks are written out (`\u{202E}`) on every page
    /// at once, as the CLI does: the templates hold none of their own.
    public func render(_ view: Any, as name: String) -> String {
        guard let page = library.render(view, withTemplate: name) else {
            preconditionFailure("no dashboard template \(name)")
        }
        return TerminalText.revealingMarks(page)
    }

    /// The static files under `assets/`, with their content types.
    public static let assets: [String: (type: String, bytes: [UInt8])] = [
        "app.css": ("text/css; charset=utf-8", PackageResources.app_css),
        "app.js": ("text/javascript; charset=utf-8", PackageResources.app_js),
    ]
}

/// What every page's frame shows: who is signed in, the form token for signing out.
public struct PageFrame: Sendable {
    /// The relative path from the page to `/ui/` (`DashboardLinks.root`: `"./"`, `"../"`…),
    /// which every link of the page starts with: links stay right under any base path a proxy
    /// adds.
    public var root: String
    public var signedIn: SignedIn?
    public var flash: String?

    public struct SignedIn: Sendable {
        public var keyName: String
        public var scope: String
        public var csrf: String
        public var onJobs: Bool
        public var onFleet: Bool
        /// The fleet page is an admin's: it shows every tenant's volume.
        public var isAdmin: Bool
    }

    public init(root: String, signedIn: SignedIn? = nil, flash: String? = nil) {
        self.root = root
        self.signedIn = signedIn
        self.flash = flash
    }

    /// The frame of a page at `links`, no one signed in.
    public init(links: DashboardLinks, flash: String? = nil) { self.init(root: links.root, flash: flash) }

    public static func signedIn(
        root: String,
        key: APIKey,
        csrf: String,
        onJobs: Bool,
        onFleet: Bool = false,
        flash: String? = nil
    ) -> PageFrame {
        PageFrame(
            root: root,
            signedIn: SignedIn(
                keyName: key.name,
                scope: key.scope.rawValue,
                csrf: csrf,
                onJobs: onJobs,
                onFleet: onFleet,
                isAdmin: key.scope == .admin
            ),
            flash: flash
        )
    }
}
