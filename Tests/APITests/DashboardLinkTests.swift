import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JobAPI
import NIOCore
import Queue
import Testing

/// Every link of every page, at every depth below `/ui/`, leads into the dashboard, and those a
/// browser follows with a GET are there (docs/dashboard.md: links are relative, built from one
/// `DashboardLinks` per page).
@Suite("Dashboard links")
struct DashboardLinkTests {
    typealias F = APIRouteTests.Fixture
    typealias B = DashboardRouteTests

    /// The links of a page: `href`, `src`, `action` and the event stream's `data-events`.
    static func links(in page: String) -> [(attribute: String, value: String)] {
        let pattern = #/(href|src|action|data-events)="([^"]*)"/#
        return page.matches(of: pattern).map {
            (String($0.output.1), String($0.output.2).replacingOccurrences(of: "&amp;", with: "&"))
        }
    }

    @Test("the links of the jobs, job, fleet, confirmation, refusal and sign-in pages all resolve into /ui/")
    func everyLinkResolves() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        let parent = try await B.submit(f, key: f.admin, input: "/in/a.mov")
        _ = try await B.submit(f, key: f.admin, input: "/in/b.mov")
        try await f.app.test(.router) { client in
            let browser = try await B.signIn(client, key: f.admin)
            var form = B.formType
            form[.cookie] = browser.cookie
            let confirmation = try await client.execute(
                uri: "/ui/bulk",
                method: .post,
                headers: form,
                body: B.form(["csrf": browser.csrf, "action": "cancel", "target": "matching", "q": ""])
            )
            #expect(confirmation.status == .ok)
            var pages: [(path: String, body: String)] = [("/ui/bulk", String(buffer: confirmation.body))]
            for path in [
                "/ui/", "/ui/?q=", "/ui/fleet", "/ui/jobs/\(parent.id.rawValue)",
                "/ui/jobs/0192f000-0000-7000-8000-00000000ffff",
            ] {
                let page = try await client.execute(uri: path, method: .get, headers: [.cookie: browser.cookie])
                #expect(page.status == .ok || page.status == .notFound, "\(path)")
                pages.append((path, String(buffer: page.body)))
            }
            let signIn = try await client.execute(uri: "/ui/signin", method: .get)
            pages.append(("/ui/signin", String(buffer: signIn.body)))
            for (path, body) in pages {
                let links = Self.links(in: body)
                #expect(links.count >= 3, "\(path) has links")
                for (attribute, link) in links where !link.hasPrefix("#") {
                    let target = try #require(APIRouteTests.resolved(link, from: path), "\(path): \(link)")
                    #expect(target.hasPrefix("/ui/"), "\(path): \(attribute)=\"\(link)\" leads to \(target)")
                    if attribute == "data-events" { #expect(target == "/ui/events", "\(path)") }
                    // What a browser fetches or follows is there (an action is a POST, the event
                    // stream would stay open).
                    guard attribute == "href" || attribute == "src" else { continue }
                    let followed = try await client.execute(
                        uri: target,
                        method: .get,
                        headers: [.cookie: browser.cookie]
                    )
                    #expect(followed.status == .ok, "\(path): \(link) → \(target): \(followed.status)")
                }
            }
            // The job page's actions are its own routes.
            let job = try #require(pages.first { $0.path == "/ui/jobs/\(parent.id.rawValue)" }?.body)
            let actions = Self.links(in: job).filter { $0.attribute == "action" }
                .compactMap { APIRouteTests.resolved($0.value, from: "/ui/jobs/\(parent.id.rawValue)") }
            #expect(actions.contains("/ui/jobs/\(parent.id.rawValue)/cancel"), "\(actions)")
            #expect(actions.contains("/ui/signout"), "\(actions)")
        }
    }
}
