import Testing

@testable import Dashboard

/// Where a page is below `/ui/`, from its route, and the links built from it.
@Suite("Dashboard links")
struct DashboardLinksTests {
    @Test(
        "a route's depth below /ui/ makes its root",
        arguments: [
            ("/ui", "./"), ("/ui/signin", "./"), ("/ui/fleet", "./"), ("/ui/bulk", "./"), ("/ui/jobs/{id}", "../"),
            ("/ui/jobs/{id}/cancel", "../../"), ("/ui/jobs/{id}/files/{name}", "../../../"),
            ("/ui/jobs/{id}/deliveries/{delivery}/redeliver", "../../../../"), ("/v1/jobs", "./"), ("/", "./"),
        ]
    )
    func root(route: String, root: String) {
        #expect(DashboardLinks(route: route).root == root)
    }

    @Test("every link is the root and a path below it")
    func links() {
        let links = DashboardLinks(route: "/ui/jobs/{id}/cancel")
        #expect(links.jobs == "../../")
        #expect(links.signIn == "../../signin")
        #expect(links.job("J1") == "../../jobs/J1")
        #expect(links.job("J1", "files/a.mp4") == "../../jobs/J1/files/a.mp4")
        #expect(DashboardLinks(depth: -3).root == "./")
    }
}
