import Foundation
import MediaTestKit
import SafeHTTP
import Testing

/// A tiny HTTP receiver in Python (the standard library only), on 127.0.0.1 with a port of the
/// kernel's choosing. It prints the port, then one JSON line per request it received (before it
/// answers), so a test knows exactly what arrived. Paths: `/slow` answers after 3 s,
/// `/redirect` answers 301 to `/ok`, `/busy` answers 503 with `Retry-After: 7`,
/// `/continue-then-hang` sends `100 Continue` and then nothing, anything else 200 with `ok`.
final class Receiver: @unchecked Sendable {
    struct Request: Sendable {
        var method: String
        var path: String
        var headers: [(name: String, value: String)]
        var body: Data

        func header(_ name: String) -> [String] {
            headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
        }
    }

    static let script = #"""
        import base64, json, os, signal, sys, threading, time
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        # A child of a test process may inherit blocked signals; and if the test process dies,
        # its end of stdin closes: exit then, never linger.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, range(1, signal.NSIG))
        def watch_parent():
            sys.stdin.buffer.read()
            os._exit(0)
        threading.Thread(target=watch_parent, daemon=True).start()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def handle_any(self):
                if self.path.split("?")[0] == "/continue-then-hang":
                    # An interim 100 Continue, then nothing: no final status ever comes.
                    sys.stdout.write(json.dumps({"method": self.command, "path": self.path, "headers": [], "body": ""}) + "\n")
                    sys.stdout.flush()
                    self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                    self.wfile.flush()
                    time.sleep(30)
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                record = {"method": self.command, "path": self.path,
                          "headers": [[k, v] for k, v in self.headers.items()],
                          "body": base64.b64encode(body).decode()}
                sys.stdout.write(json.dumps(record) + "\n")
                sys.stdout.flush()
                path = self.path.split("?")[0]
                if path == "/slow":
                    time.sleep(3)
                    self.reply(200, [], b"late")
                elif path == "/redirect":
                    self.reply(301, [("Location", "/ok")], b"moved")
                elif path == "/busy":
                    self.reply(503, [("Retry-After", "7")], b"busy")
                elif path == "/short":
                    # 200 and a Content-Length of 1000, then 100 bytes and a closed connection.
                    self.send_response(200)
                    self.send_header("Content-Length", "1000")
                    self.end_headers()
                    self.wfile.write(b"x" * 100)
                    self.wfile.flush()
                    self.close_connection = True
                elif path == "/missing":
                    self.reply(404, [], b"<Error><Code>NoSuchKey</Code></Error>")
                else:
                    self.reply(200, [], b"ok")

            def reply(self, code, headers, body):
                try:
                    self.send_response(code)
                    for name, value in headers:
                        self.send_header(name, value)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_POST = handle_any
            do_GET = handle_any
            do_PUT = handle_any

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """#

    private let child: ChildProcess
    /// The receiver's stdin: it exits when this closes (when the test process ends, at the latest).
    private let input: ChildPipe
    private let lock = NSLock()
    private var lines: [String] = []
    private(set) var port = 0

    init() throws {
        input = try ChildPipe()
        let output = try ChildPipe()
        child = try ChildProcess("python3", ["-c", Receiver.script], input: input.read, output: output.write)
        close(input.read)
        close(output.write)
        let handle = FileHandle(fileDescriptor: output.read, closeOnDealloc: true)
        let thread = Thread { [self] in
            var pending = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    lock.withLock { lines.append(line) }
                }
            }
        }
        thread.start()
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if let first = lock.withLock({ lines.first }), let port = Int(first) {
                self.port = port
                return
            }
            guard child.exit == nil else { break }
            Thread.sleep(forTimeInterval: 0.01)
        }
        stop()
        throw ReceiverError(reason: "the Python receiver did not start (is python3 on PATH?)")
    }

    struct ReceiverError: Error, CustomStringConvertible {
        var reason: String
        var description: String { reason }
    }

    func url(_ path: String, host: String = "127.0.0.1") -> String { "http://\(host):\(port)\(path)" }

    /// What arrived so far.
    var requests: [Request] {
        lock.withLock { Array(lines.dropFirst()) }.compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                return nil
            }
            let headers = (object["headers"] as? [[String]] ?? []).map { (name: $0[0], value: $0[1]) }
            return Request(
                method: object["method"] as? String ?? "",
                path: object["path"] as? String ?? "",
                headers: headers,
                body: Data(base64Encoded: object["body"] as? String ?? "") ?? Data()
            )
        }
    }

    /// Waits (a little) until `count` requests arrived; the receiver logs before answering,
    /// so a sender that got its answer only waits for the pipe.
    func waitForRequests(_ count: Int, timeout: TimeInterval = 5) async -> [Request] {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let requests = self.requests
            if requests.count >= count { return requests }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return requests
    }

    /// Kills the receiver and waits (briefly) until it is gone.
    func stop() {
        guard child.exit == nil else { return }
        close(input.write)
        child.signal(SIGKILL)
        let deadline = Date().addingTimeInterval(5)
        while child.exit == nil && Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
    }

    deinit { stop() }
}

/// `HTTPSender.post` blocks: run it on a thread of its own, off the test's executor.
func post(_ sender: HTTPSender, _ request: HTTPRequest) async -> HTTPResponse {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: sender.post(request)) }
        thread.start()
    }
}

/// HTTPSender against a real HTTP server on this host (docs/spec.md §6): the exact body and headers,
/// the address guard on connect, no redirects, Retry-After, the timeout.
@Suite("HTTPSender", .serialized)
struct HTTPSenderTests {
    static let open = AddressPolicy(allowPrivate: true)
    static let body = Data(
        #"{"data":{"note":"ünïcode ✓ \"quoted\"","n":2432232314},"timestamp":"2026-01-01T00:00:00.123Z","type":"job.completed"}"#
            .utf8
    )

    static func request(_ url: String, body: Data = HTTPSenderTests.body) -> HTTPRequest {
        // Headers as a webhook carries them (the signature's value is any text to the sender).
        HTTPRequest(
            url: url,
            body: body,
            headers: [
                ("webhook-id", "msg_test\(UInt32.random(in: 0...UInt32.max))"), ("webhook-timestamp", "1767225600"),
                ("webhook-signature", "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4="),
            ]
        )
    }

    @Test("allowPrivate: a POST gets 200, and the receiver got the exact body and headers")
    func delivered() async throws {
        let receiver = try Receiver()
        defer { receiver.stop() }
        let request = Self.request(receiver.url("/hooks/jobctl?x=1&y=%C3%BC"))
        let response = await post(HTTPSender(policy: Self.open), request)
        #expect(response.statusCode == 200, "\(response.failure?.message ?? "")")
        #expect(response.succeeded)
        #expect(response.failure?.message == nil)
        #expect(response.failed(with: .refused) == false)
        #expect(response.retryAfter == nil)
        #expect(response.body == "ok")
        #expect(response.latency > .zero && response.latency < .seconds(5))

        let received = await receiver.waitForRequests(1)
        try #require(received.count == 1, "one request arrived: \(received.map(\.path))")
        let got = received[0]
        #expect(got.method == "POST")
        #expect(got.path == "/hooks/jobctl?x=1&y=%C3%BC")
        #expect(got.body == Self.body, "the exact bytes: \(String(decoding: got.body, as: UTF8.self))")
        for (name, value) in request.headers {
            #expect(got.header(name) == [value], "\(name): \(got.header(name))")
        }
        #expect(got.header("content-type") == ["application/json"])
        #expect(got.header("content-length") == ["\(Self.body.count)"])
        #expect(got.header("expect") == [], "no Expect: 100-continue")

        // Again with the same sender (a reused connection): the same exact bytes.
        let second = await post(HTTPSender(policy: Self.open), Self.request(receiver.url("/again")))
        #expect(second.statusCode == 200)
        let both = await receiver.waitForRequests(2)
        #expect(both.map(\.path) == ["/hooks/jobctl?x=1&y=%C3%BC", "/again"])
        #expect(both.last?.body == Self.body)
    }

    @Test("the same sender, many requests: every one arrives once, in order")
    func reusedSender() async throws {
        let receiver = try Receiver()
        defer { receiver.stop() }
        let sender = HTTPSender(policy: Self.open)
        for index in 0..<5 {
            let body = Data(#"{"index":\#(index)}"#.utf8)
            let response = await post(sender, Self.request(receiver.url("/n/\(index)"), body: body))
            #expect(response.statusCode == 200)
        }
        let received = await receiver.waitForRequests(5)
        #expect(received.map(\.path) == (0..<5).map { "/n/\($0)" })
        #expect(received.map { String(decoding: $0.body, as: UTF8.self) } == (0..<5).map { #"{"index":\#($0)}"# })
    }

    @Test("the default policy refuses 127.0.0.1: nothing reaches the receiver")
    func refusedLoopback() async throws {
        let receiver = try Receiver()
        defer { receiver.stop() }
        let response = await post(HTTPSender(policy: AddressPolicy()), Self.request(receiver.url("/refused")))
        #expect(response.failed(with: .refused))
        #expect(response.statusCode == nil)
        #expect(response.succeeded == false)
        #expect(
            response.failure?.message.contains("loopback") == true,
            "the error says why: \(response.failure?.message ?? "nil")"
        )
        // A request that may pass, after: the receiver saw only that one.
        let control = await post(HTTPSender(policy: Self.open), Self.request(receiver.url("/control")))
        #expect(control.statusCode == 200)
        let received = await receiver.waitForRequests(1)
        #expect(received.map(\.path) == ["/control"], "the refused request never arrived")
    }

    @Test("a name that resolves to loopback (localhost) is refused at connect time")
    func refusedLocalhost() async throws {
        let receiver = try Receiver()
        defer { receiver.stop() }
        let response = await post(
            HTTPSender(policy: AddressPolicy()),
            Self.request(receiver.url("/refused", host: "localhost"))
        )
        #expect(response.failed(with: .refused))
        #expect(response.statusCode == nil)
        #expect(response.failure?.message.contains("loopback") == true, "\(response.failure?.message ?? "nil")")
        // The same name with the guard lifted connects: the refusal was the guard's.
        let allowed = await post(
            HTTPSender(policy: Self.open),
            Self.request(receiver.url("/allowed", host: "localhost"))
        )
        #expect(allowed.statusCode == 200, "\(allowed.failure?.message ?? "")")
        #expect(allowed.failed(with: .refused) == false)
        let received = await receiver.waitForRequests(1)
        #expect(received.map(\.path) == ["/allowed"])
    }

    @Test("a 301 is a failure with its status; the redirect is not followed")
    func redirectNotFollowed() async throws {
        let receiver = try Receiver()
        defer { receiver.stop() }
        let response = await post(HTTPSender(policy: Self.open), Self.request(receiver.url("/redirect")))
        #expect(response.statusCode == 301)
        #expect(response.succeeded == false)
        #expect(response.failed(with: .refused) == false)
        #expect(response.failure?.message != nil, "a redirect is an error in the delivery log")
        #expect(response.failure?.message.contains("301") == true, "\(response.failure?.message ?? "nil")")
        let control = await post(HTTPSender(policy: Self.open), Self.request(receiver.url("/control")))
        #expect(control.statusCode == 200)
        let received = await receiver.waitForRequests(2)
        #expect(received.map(\.path) == ["/redirect", "/control"], "one request for the 301, none to its Location")
    }

    @Test("503 with Retry-After: 7 gives retryAfter 7 s")
    func retryAfter() async throws {
        let receiver = try Receiver()
        defer { receiver.stop() }
        let response = await post(HTTPSender(policy: Self.open), Self.request(receiver.url("/busy")))
        #expect(response.statusCode == 503)
        #expect(response.succeeded == false)
        #expect(response.retryAfter == .seconds(7))
        #expect(response.failure?.message.contains("503") == true, "\(response.failure?.message ?? "nil")")
        #expect(response.body == "busy")
        // A later answer without Retry-After on the same sender has none.
        let sender = HTTPSender(policy: Self.open)
        _ = await post(sender, Self.request(receiver.url("/busy")))
        let ok = await post(sender, Self.request(receiver.url("/ok")))
        #expect(ok.statusCode == 200)
        #expect(ok.retryAfter == nil)
    }

    @Test("only http and https: another scheme sends nothing")
    func otherSchemes() async throws {
        let receiver = try Receiver()
        defer { receiver.stop() }
        for url in [
            "ftp://127.0.0.1:\(receiver.port)/x", "gopher://127.0.0.1:\(receiver.port)/x",
            "dict://127.0.0.1:\(receiver.port)/x",
        ] {
            let response = await post(HTTPSender(policy: Self.open), Self.request(url))
            #expect(response.statusCode == nil, "\(url)")
            #expect(response.succeeded == false, "\(url)")
            #expect(response.failure?.message != nil, "\(url)")
        }
        let control = await post(HTTPSender(policy: Self.open), Self.request(receiver.url("/control")))
        #expect(control.statusCode == 200)
        // The receiver logs before it answers: anything sent before /control is in the log.
        let received = await receiver.waitForRequests(1)
        #expect(received.map(\.path) == ["/control"])
    }
}

extension HTTPSenderTests {
    /// The tests of HTTPSenderTests whose assertion is about time: `make test` runs them on their
    /// own, one at a time, after the others (`make test-timing`).
    @Suite("HTTPSender: timing", .serialized)
    struct Timing {
        @Test("a receiver slower than the timeout: a timeout error, no status")
        func timeout() async throws {
            let receiver = try Receiver()
            defer { receiver.stop() }
            let started = ContinuousClock.now
            let response = await post(
                HTTPSender(policy: HTTPSenderTests.open, timeout: .seconds(1)),
                HTTPSenderTests.request(receiver.url("/slow"))
            )
            let elapsed = ContinuousClock.now - started
            #expect(response.statusCode == nil)
            #expect(response.succeeded == false)
            #expect(response.failed(with: .refused) == false)
            #expect(
                response.failure?.message.lowercased().contains("timeout") == true
                    || response.failure?.message.lowercased().contains("timed out") == true,
                "\(response.failure?.message ?? "nil")"
            )
            #expect(
                elapsed >= .milliseconds(900) && elapsed < .milliseconds(2900),
                "gave up after about 1 s: \(elapsed)"
            )
            let received = await receiver.waitForRequests(1)
            #expect(received.map(\.path) == ["/slow"], "the request arrived; the answer was too late")
        }

        /// An upload whose server answers `100 Continue` and then hangs has no final status: a
        /// network failure (retried by uploads), not "HTTP 100" (which was taken as final).
        @Test("100 Continue and then silence: a stall, no status")
        func interimStatusIsNotAnAnswer() async throws {
            let receiver = try Receiver()
            defer { receiver.stop() }
            let file = NSTemporaryDirectory() + "jobctl-put-\(UUID().uuidString)"
            FileManager.default.createFile(atPath: file, contents: Data(repeating: 7, count: 256 * 1024))
            defer { try? FileManager.default.removeItem(atPath: file) }
            let sender = HTTPSender(policy: HTTPSenderTests.open, stallLimit: (1024, .seconds(2)))
            let started = ContinuousClock.now
            let response = await withCheckedContinuation { continuation in
                Thread {
                    continuation.resume(
                        returning: sender.send(
                            HTTPRequest(
                                url: receiver.url("/continue-then-hang"),
                                method: .put(file: file, contentType: "video/mp4")
                            )
                        )
                    )
                }.start()
            }
            #expect(
                response.statusCode == nil,
                "an interim 100 is not a status: \(String(describing: response.statusCode))"
            )
            #expect(
                response.succeeded == false && response.failed(with: .refused) == false
                    && response.failed(with: .certificateRejected) == false
            )
            #expect(response.failure?.message != nil)
            #expect(
                ContinuousClock.now - started < .seconds(25),
                "the stall limit ended it, not the server (silent for 30 s)"
            )
            #expect(await receiver.waitForRequests(1).map(\.path) == ["/continue-then-hang"])
        }
    }
}
