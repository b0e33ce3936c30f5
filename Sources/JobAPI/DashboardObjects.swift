import Dashboard
import Foundation
import Hummingbird
import JobKinds
import JobctlCore
import NIOCore
import ObjectStorage
import Queue
import Synchronization

/// A job's files in a bucket (`s3://`), on its page as local ones are: the server reads them
/// with its own object store credentials (the workers' environment: docs/operations.md) and
/// streams them to the session, up to 4 MiB a request to the store, byte ranges included (a
/// `<video>` seeks with them). Nothing of the store reaches the browser: no pre-signed URL,
/// no signature.
/// Only names the job's result lists, of a job the session may see, inside the key's prefix
/// of `--s3-root` (checked as a worker checks it).
extension DashboardRoutes {
    /// How much of an object one request to the store asks for (its response limit), and
    /// for the first request of a response: a `<video>` that seeks drops most responses early,
    /// and each byte asked of the store is paid for.
    static let objectChunk: Int64 = 4 << 20
    static let firstObjectChunk: Int64 = 512 << 10

    /// Where a listed file of a job whose output is in a bucket is; `nil` for a job whose
    /// output is not, a name not listed, or a location outside the key's prefix.
    func objectFile(_ name: String, of job: Job) -> S3Location? {
        guard MediaLocation.isObjectStore(job.output), let paths = resolvedOutput(name, of: job),
            let output = try? S3Location.parse(paths.output).get()
        else { return nil }
        // A file set's output is a key template (`…/{name}`), as the worker wrote it.
        return job.result?["files"] == nil ? output : output.object(named: name)
    }

    /// The object as a file response: whole, or the one byte range asked for.
    func objectResponse(
        _ request: Request,
        _ session: Session,
        name: String,
        _ object: S3Location
    ) async throws
        -> Response
    {
        let store: S3Client
        let info: S3Client.ObjectInfo?
        do {
            store = try objects.client()
            info = try await onDedicatedThread("jobctl.dashboard.s3") { try store.head(object) }
        } catch {
            logger.warning("Reading a job's file from the bucket failed", metadata: ["error": "\(error)"])
            return refusal(session, "The object store did not answer; try again later.", status: .badGateway)
        }
        guard let info else {
            return refusal(session, "There is no such file of a job of yours in the bucket.", status: .notFound)
        }
        // Held by the response's body: released when it is done or dropped.
        guard let ticket = objectReads.take() else {
            var busy = refusal(
                session,
                "Too many files are being read from the bucket; try again.",
                status: .serviceUnavailable
            )
            busy.headers[.retryAfter] = "5"
            return busy
        }
        var headers = Self.fileHeaders(name)
        headers[.acceptRanges] = "bytes"
        let size = Int(info.size)
        var range = 0...max(0, size - 1)
        var status = HTTPResponse.Status.ok
        if let header = request.headers[.range], size > 0 {
            guard let asked = Self.byteRange(header, size: size) else {
                headers[.contentRange] = "bytes */\(size)"
                return Response(status: .rangeNotSatisfiable, headers: headers)
            }
            range = asked
            status = .partialContent
            headers[.contentRange] = "bytes \(asked.lowerBound)-\(asked.upperBound)/\(size)"
        }
        headers[.contentLength] = "\(size == 0 ? 0 : range.count)"
        guard size > 0 else { return Response(status: status, headers: headers) }
        let logger = self.logger
        return Response(
            status: status,
            headers: headers,
            body: ResponseBody { [range, ticket] writer in
                withExtendedLifetime(ticket) {}
                var offset = Int64(range.lowerBound)
                let last = Int64(range.upperBound)
                var size = Self.firstObjectChunk
                while offset <= last {
                    let chunk = offset...min(offset + size - 1, last)
                    size = Self.objectChunk
                    let data = try await onDedicatedThread("jobctl.dashboard.s3") {
                        try store.get(object, range: chunk)
                    }
                    // Exactly the bytes asked for, or the response ends short: an object that
                    // shrank, or a store that ignores ranges, must not fill it with other bytes.
                    guard data.count == chunk.count else {
                        logger.warning(
                            "The bucket answered a range with other bytes",
                            metadata: ["object": "\(object)", "asked": "\(chunk.count)", "got": "\(data.count)"]
                        )
                        throw HTTPError(.badGateway)
                    }
                    try await writer.write(ByteBuffer(bytes: data))
                    offset += Int64(data.count)
                }
                try await writer.finish(nil)
            }
        )
    }
}

/// How many responses read from the bucket at once, server-wide: each holds a thread and up to
/// 8 MiB while it runs.
package final class ObjectReadLimit: Sendable {
    let maximum: Int
    private let reading = Mutex(0)

    package init(maximum: Int) { self.maximum = maximum }

    /// A ticket while fewer than `maximum` are out; it gives its place back when released.
    package func take() -> Ticket? {
        let taken = reading.withLock { count -> Bool in
            guard count < maximum else { return false }
            count += 1
            return true
        }
        return taken ? Ticket(self) : nil
    }

    fileprivate func giveBack() { reading.withLock { $0 -= 1 } }

    package final class Ticket: Sendable {
        let limit: ObjectReadLimit
        fileprivate init(_ limit: ObjectReadLimit) { self.limit = limit }
        deinit { limit.giveBack() }
    }
}
