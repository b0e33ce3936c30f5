import Foundation
import JobctlCore
import Media
import ObjectStorage
import Queue
import SafeHTTP

extension Submission {
    /// A location as the job row stores it and as it names a file on this host. A URL is
    /// http(s) (an input may be `file://` on the command line) and passes the address guard
    /// without resolving anything, or `s3://BUCKET/KEY` (an API key's under its prefix of
    /// `--s3-root` only); a path is made absolute (the command line) or placed in the key's own
    /// directory under the root (an API key), and must stay there.
    static func location(
        _ location: String,
        field: String,
        code: ErrorCode,
        rules: SubmissionRules
    ) throws(SubmissionError) -> (stored: String, local: String) {
        guard !location.isEmpty, location.utf8.count <= 4096, !location.contains("\0") else {
            throw rules.invalid(field, "is a path, an http(s) URL or an s3:// location of at most 4096 bytes")
        }
        if let separator = location.range(of: "://") {
            let scheme = location[..<separator.lowerBound].lowercased()
            if scheme == "file", field == "input", case .host = rules.place { return (location, location) }
            if scheme == "s3" {
                // The worker's credentials reach every bucket they may: an API key's jobs get
                // their own prefix under the operator's root, or none (decisions 114, 117).
                if case .tenant(let owner, let roots) = rules.place {
                    if let problem = TenantObjects.problem(location, root: roots.objectRoot, owner: owner) {
                        throw SubmissionError(code: code, field: field, message: "\(rules.name(field)): \(problem)")
                    }
                    return (location, location)
                }
                if let problem = S3Location.problem(with: location.replacingOccurrences(of: "{name}", with: "name")) {
                    throw rules.invalid(field, problem)
                }
                return (location, location)
            }
            guard scheme == "http" || scheme == "https" else {
                throw rules.invalid(
                    field,
                    "is a path, an http(s) URL or an s3:// location, not a \(scheme.prefix(20)):// URL"
                )
            }
            try guardAddress(location, field: field, code: code, rules: rules)
            return (location, location)
        }
        switch rules.place {
        case .host(let currentDirectory):
            let path =
                location.hasPrefix("/")
                ? location
                : URL(fileURLWithPath: location, relativeTo: URL(fileURLWithPath: currentDirectory))
                    .standardizedFileURL.path
            return (path, path)
        case .tenant(let owner, let roots):
            let root = field == "input" ? roots.inputRoot : roots.outputRoot
            guard let root else {
                throw SubmissionError(
                    code: code,
                    field: field,
                    message:
                        "local paths are not accepted: this server was started without --\(field)-root; send an http(s) URL"
                )
            }
            if let problem = TenantPath.problem(location) {
                throw SubmissionError(code: code, field: field, message: "\(rules.name(field)): \(problem)")
            }
            guard TenantPath.isDirectoryName(owner) else {
                throw SubmissionError(code: code, field: field, message: "this key cannot have local files")
            }
            let path = TenantPath.resolve(location, root: root, owner: owner)
            // What this server looks at (an input's tracks, an output's kind) stays in the
            // key's directory too: a link there that leads out is refused, not followed.
            let directory = OutputDestination.resolved(TenantPath.directory(root: root, owner: owner))
            let resolved = OutputDestination.resolved(path)
            guard resolved == directory || resolved.hasPrefix(directory + "/") else {
                throw SubmissionError(
                    code: code,
                    field: field,
                    message: "\(rules.name(field)): \(location) leads outside this key's directory"
                )
            }
            return (location, path)
        }
    }

    /// `code` for a URL the address policy refuses without resolving anything (a private
    /// address, `localhost`, a malformed URL).
    static func guardAddress(
        _ url: String,
        field: String,
        code: ErrorCode,
        rules: SubmissionRules
    )
        throws(SubmissionError)
    {
        guard let refusal = rules.addressPolicy.staticRefusal(for: url) else { return }
        var message = "\(MediaLocation.displayed(url)): \(refusal)"
        // A malformed URL is refused whatever the policy; only an address is lifted.
        let malformed = (try? URLShape.parse(url.replacingOccurrences(of: "{name}", with: "name")).get()) == nil
        if case .flags = rules.naming, !malformed {
            let what = ["webhook": "receivers", "output": "storage"][field] ?? "media"
            message += " (--allow-private-webhooks lifts this for self-hosted \(what))"
        }
        throw SubmissionError(code: code, field: field, message: message)
    }

    static func checkWebhook(_ webhook: String, rules: SubmissionRules) throws(SubmissionError) {
        guard let url = URL(string: webhook), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
            url.host?.isEmpty == false
        else {
            throw rules.invalid(
                "webhook",
                "must be an http(s) URL, not '\(MediaLocation.displayed(webhook).prefix(200))'"
            )
        }
        try guardAddress(webhook, field: "webhook", code: .webhookForbidden, rules: rules)
    }
}
