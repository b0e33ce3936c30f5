/// Where a page is below the dashboard's root (`/ui/`), and every link of the page built from
/// that one value. Links stay relative, so the dashboard works under any base path a proxy adds
/// (docs/dashboard.md, "Behind a proxy"); `root` is `./` on a page at the top (`/ui/`,
/// `/ui/fleet`), `../` one level down (`/ui/jobs/ID`), and so on.
public struct DashboardLinks: Sendable, Hashable {
    /// How many directories the page is below the root.
    public let depth: Int

    public init(depth: Int) { self.depth = max(0, depth) }

    /// The links of a page routed as `route` (`/ui/jobs/{id}`), the dashboard at `mount` (`/ui`).
    /// A route outside `mount` is taken as the root.
    public init(route: String, mount: String = "/ui") {
        let segments = route.split(separator: "/")
        let base = mount.split(separator: "/")
        guard segments.starts(with: base) else {
            self.init(depth: 0)
            return
        }
        // `/ui` and `/ui/fleet` are at the top; each segment past the first is a directory.
        self.init(depth: segments.count - base.count - 1)
    }

    /// The relative path from the page to the root: `./`, `../`, `../../`…
    public var root: String { depth == 0 ? "./" : String(repeating: "../", count: depth) }

    /// The jobs page (the root itself).
    public var jobs: String { root }
    /// The sign-in page.
    public var signIn: String { root + "signin" }
    /// A job's page.
    public func job(_ id: String) -> String { root + "jobs/" + DashboardText.urlEscaped(id) }
    /// A link below a job's page (`files/NAME`, `deliveries/ID/redeliver`): `path` is taken as
    /// it is, escaped by the caller.
    public func job(_ id: String, _ path: String) -> String { job(id) + "/" + path }
}
