import Foundation
import MediaTestKit
import SafeHTTP
import Testing

/// `HTTPRequest.Method.download(to:)`: a GET streamed into a file, against the same real HTTP
/// server as `HTTPSenderTests`. Only a 2xx answer received whole is a success.
@Suite("HTTPSender downloads", .serialized)
struct HTTPDownloadTests {
    static func download(_ url: String, to path: String) async -> HTTPResponse {
        let sender = HTTPSender(policy: AddressPolicy(allowPrivate: true))
        return await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: sender.send(HTTPRequest(url: url, method: .download(to: path)))) }
                .start()
        }
    }

    @Test("a 2xx body goes into the file; an error's body stays in the response, not the file")
    func bodyIntoTheFile() async throws {
        let receiver = try Receiver()
        defer { receiver.stop() }
        try await withTemporaryDirectory("download") { directory in
            let path = directory.file("body")
            let ok = await Self.download(receiver.url("/ok"), to: path)
            #expect(ok.succeeded && ok.statusCode == 200)
            #expect(FileManager.default.contents(atPath: path) == Data("ok".utf8))
            let missing = await Self.download(receiver.url("/missing"), to: path)
            #expect(!missing.succeeded && missing.statusCode == 404 && missing.body.contains("NoSuchKey"))
            #expect(FileManager.default.contents(atPath: path)?.isEmpty == true, "an error's body was written")
        }
    }

    @Test("a body cut short after a 200: not a success, whatever the status line said")
    func truncatedBodyIsAFailure() async throws {
        let receiver = try Receiver()
        defer { receiver.stop() }
        try await withTemporaryDirectory("download-short") { directory in
            let response = await Self.download(receiver.url("/short"), to: directory.file("body"))
            #expect(!response.succeeded, "a 100-byte body of 1000 passed")
            #expect(response.failure != nil && response.statusCode == 200, "\(String(describing: response.failure))")
        }
    }
}
