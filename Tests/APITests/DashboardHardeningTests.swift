import Dashboard
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JobAPI
import MediaTestKit
import NIOCore
import Queue
import QueueSQLite
import Testing

/// What a hostile tenant tried on the dashboard (issue 42): a GET that trapped the server,
/// names that read backwards, a link in its own folder to another tenant's file, a form too
/// large, a place in line that told it the others' volume, downloads it stopped reading.
@Suite("Dashboard against a hostile tenant")
struct DashboardHardeningTests {
    typealias F = APIRouteTests.Fixture
    typealias D = DashboardRouteTests
    typealias Files = DashboardFileTests

    /// A page's HTML as a signed-in browser gets it.
    static func page(_ client: some TestClientProtocol, _ path: String, _ browser: D.Browser) async throws -> String {
        String(buffer: try await client.execute(uri: path, method: .get, headers: [.cookie: browser.cookie]).body)
    }

    @Test("filters at the edges of numbers and time are answered, never a crash: the page and the bulk form")
    func filterEdges() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        _ = try await D.submit(f, key: f.read, input: "/in/a.mov")
        try await f.app.test(.router) { client in
            let browser = try await D.signIn(client, key: f.read)
            let queries = [
                "priority:>9223372036854775807", "priority:<=9223372036854775807", "priority:<-9223372036854775808",
                "priority:>=-9223372036854775808", "-priority:>9223372036854775807", "after:-infh",
                "after:-9999999999999h", "before:-1e308d", "after:-nanh", "before:9999-12-31T23:59:59Z",
                "output:" + (1...1000).map(String.init).joined(separator: ","),
            ]
            for q in queries {
                let response = try await client.execute(
                    uri: "/ui/?q=" + DashboardText.urlEscaped(q, alsoKeeping: ":,"),
                    method: .get,
                    headers: [.cookie: browser.cookie]
                )
                #expect(response.status == .ok, "\(q.prefix(40))")
            }
            // The 1,000 values are a reason on the page, not "database unavailable".
            let many = try await client.execute(
                uri: "/ui/?q=output:" + (1...1000).map(String.init).joined(separator: ","),
                method: .get,
                headers: [.cookie: browser.cookie]
            )
            #expect(String(buffer: many.body).contains("at most 32 values"))
        }
        // A bulk form (a submit key acts) with the same filters.
        try await f.app.test(.router) { client in
            let browser = try await D.signIn(client, key: f.submit)
            var headers = D.formType
            headers[.cookie] = browser.cookie
            for q in ["priority:>9223372036854775807", "after:-infh", "before:-1e308d"] {
                let response = try await client.execute(
                    uri: "/ui/bulk",
                    method: .post,
                    headers: headers,
                    body: D.form(["csrf": browser.csrf, "action": "cancel", "target": "matching", "q": q])
                )
                #expect([.ok, .badRequest].contains(response.status), "\(q): \(response.status)")
            }
        }
    }

    @Test("invisible reordering marks in a name are shown as escapes on every page, never raw")
    func bidiNames() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        let job = try await D.submit(f, key: f.submit, input: "/in/invoice-\u{202E}gpj.exe\u{200B}")
        try await f.app.test(.router) { client in
            let browser = try await D.signIn(client, key: f.submit)
            for path in ["/ui/?q=status:queued", "/ui/jobs/\(job.id.rawValue)"] {
                let page = try await Self.page(client, path, browser)
                #expect(page.contains(#"invoice-\u{202E}gpj.exe\u{200B}"#), "\(path)")
                #expect(!page.unicodeScalars.contains { [0x202E, 0x200B].contains($0.value) }, "\(path)")
            }
        }
    }

    @Test(
        "a file served is the one checked: a hard link or a symbolic link in one's own folder, a folder swapped for a link"
    )
    func linkedFiles() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        let files: JSONValue = .object(["files": .array([.object(["name": .string("a.jpg")])])])
        let mine = try await Files.completed(f, key: f.submit, output: "thumbs", result: files)
        let linked = try await Files.completed(f, key: f.submit, output: "linked", result: files)
        let swapped = try await Files.completed(f, key: f.submit, output: "swapped", result: files)
        let owner = f.submitID
        let other = String(f.other.split(separator: "_")[1])
        try Files.write(f, key: f.submit, "thumbs/a.jpg", bytes: 100)
        // Another tenant's file, and ways to it from the first tenant's folders.
        try Files.write(f, key: f.other, "secret/a.jpg", bytes: 77)
        let secret = f.directory.file("\(other)/secret/a.jpg")
        try FileManager.default.createDirectory(
            atPath: f.directory.file("\(owner)/linked"),
            withIntermediateDirectories: true
        )
        #expect(link(secret, f.directory.file("\(owner)/linked/a.jpg")) == 0, "a hard link")
        try FileManager.default.createSymbolicLink(
            atPath: f.directory.file("\(owner)/swapped"),
            withDestinationPath: f.directory.file("\(other)/secret")
        )
        try await f.app.test(.router) { client in
            let browser = try await D.signIn(client, key: f.submit)
            func get(_ job: Job) async throws -> TestResponse {
                try await client.execute(
                    uri: "/ui/jobs/\(job.id.rawValue)/files/a.jpg",
                    method: .get,
                    headers: [.cookie: browser.cookie]
                )
            }
            let own = try await get(mine)
            #expect(own.status == .ok && own.body.readableBytes == 100)
            #expect(try await get(linked).status == .notFound, "a hard link to another tenant's file")
            #expect(try await get(swapped).status == .notFound, "a folder that is a link to another tenant's")
            // A symbolic link in place of the file.
            try FileManager.default.removeItem(atPath: f.directory.file("\(owner)/linked/a.jpg"))
            try FileManager.default.createSymbolicLink(
                atPath: f.directory.file("\(owner)/linked/a.jpg"),
                withDestinationPath: f.directory.file("\(owner)/thumbs/a.jpg")
            )
            #expect(try await get(linked).status == .notFound, "a symbolic link, even to its own file")
        }
    }

    @Test("a form over 64 KiB without a declared length is 413, not 500")
    func largeForm() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        try await f.app.test(.live) { client in
            let browser = try await D.signIn(client, key: f.submit)
            let connection = try await RawConnection.open(port: try #require(client.port))
            let chunk = "csrf=\(browser.csrf)&q=" + String(repeating: "a", count: 70 * 1024)
            let head = try await connection.exchange(
                "POST /ui/bulk HTTP/1.1\r\nHost: localhost\r\nCookie: \(browser.cookie)\r\n"
                    + "Content-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + String(chunk.utf8.count, radix: 16) + "\r\n" + chunk + "\r\n0\r\n\r\n",
                until: "\r\n"
            )
            #expect(head.hasPrefix("HTTP/1.1 413"), "\(head)")
        }
    }

    @Test(
        "downloads nobody reads hold a key's share of reads, not the server's memory: 429 past it, another key unaffected"
    )
    func unreadDownloads() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        let files: JSONValue = .object(["files": .array([.object(["name": .string("big.mp4")])])])
        let job = try await Files.completed(f, key: f.submit, output: "big", result: files)
        let theirs = try await Files.completed(f, key: f.other, output: "small", result: .object([:]))
        try Files.write(f, key: f.other, "small", bytes: 10)
        // 64 MiB that take no disk: more than the loopback's buffers hold.
        try Files.write(f, key: f.submit, "big/big.mp4", bytes: 0)
        let big = open(f.directory.file("\(f.submitID)/big/big.mp4"), O_WRONLY)
        #expect(ftruncate(big, 64 << 20) == 0)
        close(big)
        try await f.app.test(.live) { client in
            let port = try #require(client.port)
            let browser = try await D.signIn(client, key: f.submit)
            let path = "/ui/jobs/\(job.id.rawValue)/files/big.mp4"
            var stalled: [RawConnection] = []
            for _ in 0..<8 {
                let connection = try await RawConnection.open(port: port, receiveBuffer: 4096)
                // The response has begun (its read is counted); then nobody reads it.
                let head = try await connection.exchange(
                    "GET \(path) HTTP/1.1\r\nHost: localhost\r\nCookie: \(browser.cookie)\r\n\r\n",
                    until: "\r\n"
                )
                #expect(head.hasPrefix("HTTP/1.1 200"))
                stalled.append(connection)
            }
            let ninth = try await client.execute(uri: path, method: .get, headers: [.cookie: browser.cookie])
            #expect(ninth.status == .tooManyRequests)
            #expect(ninth.headers[.retryAfter] != nil)
            let other = try await D.signIn(client, key: f.other)
            let small = try await client.execute(
                uri: "/ui/jobs/\(theirs.id.rawValue)/files/small",
                method: .get,
                headers: [.cookie: other.cookie]
            )
            #expect(small.status == .ok, "another key has its own share")
            // Closed connections give their reads back (the server notices at its next write).
            stalled.removeAll()
            let givenBack = try await eventually(within: .seconds(60)) {
                try await client.execute(uri: path, method: .head, headers: [.cookie: browser.cookie]).status == .ok
            }
            #expect(givenBack, "the closed connections' reads were not given back")
        }
    }

    @Test("a tenant's place in line counts its own jobs; an admin's the whole queue")
    func placeInLine() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        for index in 0..<5 { _ = try await D.submit(f, key: f.other, input: "/in/theirs-\(index).mov") }
        _ = try await D.submit(f, key: f.submit, input: "/in/mine-0.mov")
        let job = try await D.submit(f, key: f.submit, input: "/in/mine-1.mov")
        try await f.app.test(.router) { client in
            let path = "/ui/jobs/\(job.id.rawValue)"
            let page = try await Self.page(client, path, try await D.signIn(client, key: f.submit))
            #expect(page.contains("1 of your jobs comes before it"))
            #expect(!page.contains("6 jobs come before it"))
            let whole = try await Self.page(client, path, try await D.signIn(client, key: f.admin))
            #expect(whole.contains("6 jobs come before it"))
        }
    }

    @Test("a page of long names stays small: table cells are cut, the job's page shows the whole name")
    func longNames() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        var jobs: [Job] = []
        for index in 0..<50 {
            jobs.append(
                try await D.submit(
                    f,
                    key: f.submit,
                    input: "/in/" + String(repeating: "n", count: 4000) + "-\(index).mov"
                )
            )
        }
        let last = jobs.last
        try await f.app.test(.router) { client in
            let browser = try await D.signIn(client, key: f.submit)
            let page = try await client.execute(uri: "/ui/", method: .get, headers: [.cookie: browser.cookie])
            #expect(page.body.readableBytes < 100_000, "\(page.body.readableBytes) bytes for 50 jobs")
            #expect(String(buffer: page.body).contains("…nnnn"))
            let job = try #require(last)
            let whole = try await Self.page(client, "/ui/jobs/\(job.id.rawValue)", browser)
            #expect(whole.contains(String(repeating: "n", count: 4000) + "-49.mov"))
        }
    }

    @Test("a page costs its key by its size, as an API response does")
    func pagesChargedBySize() async throws {
        let burst = 8.0
        let f = try await F { $0.rateLimit = RateLimit(perSecond: 0.001, burst: burst) }
        defer { f.directory.remove() }
        for index in 0..<50 {
            _ = try await D.submit(
                f,
                key: f.submit,
                input: "/in/" + String(repeating: "x", count: 300) + "-\(index).mov"
            )
        }
        try await f.app.test(.router) { client in
            let browser = try await D.signIn(client, key: f.submit)
            var bytes = 0
            var pages = 0
            while pages < 20 {
                let page = try await client.execute(uri: "/ui/", method: .get, headers: [.cookie: browser.cookie])
                guard page.status == .ok else {
                    #expect(page.status == .tooManyRequests)
                    break
                }
                bytes = page.body.readableBytes
                pages += 1
            }
            // What the bucket allows: a token to start each page, then its size past 16 KB.
            #expect(bytes > 32 * 1024, "the page is large enough to cost more than one token: \(bytes)")
            // The sign-in's own look at the jobs page was the first.
            var tokens = burst
            var expected = 0
            while tokens >= 1 {
                tokens -= 1 + Double(max(0, bytes - 16 * 1024)) / Double(16 * 1024)
                expected += 1
            }
            #expect(pages + 1 == expected, "\(pages) pages of \(bytes) bytes from a burst of \(burst)")
        }
    }
}
