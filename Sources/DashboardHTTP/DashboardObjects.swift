import Dashboard
import Foundation
import Hummingbird
import JobAPI
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
        } catch let error as S3Error where error.code == .configuration {
            // No store, or one configured wrongly: trying again will not help.
            logger.warning("Reading a job's file from the bucket failed", metadata: ["error": "\(error)"])
            return refusal(
                session,
                "This server cannot read the object store (\(error.message)); ask its operator.",
                status: .serviceUnavailable
            )
        } catch {
            logger.warning("Reading a job's file from the bucket failed", metadata: ["error": "\(error)"])
            return refusal(session, "The object store did not answer; try again later.", status: .badGateway)
        }
        guard let info else {
            return refusal(session, "There is no such file of a job of yours in the bucket.", status: .notFound)
        }
        // Held by the response's body: released when it is done or dropped.
        let ticket: FileReadLimit.Ticket
        switch objectReads.take(key: session.key.id) {
        case .success(let taken): ticket = taken
        case .failure(let busy): return busyRefusal(session, busy)
        }
        let (status, headers, range): (HTTPResponse.Status, HTTPFields, ClosedRange<Int>)
        switch Self.fileHead(request, name: name, size: Int(info.size)) {
        case .answered(let response): return response
        case .body(let head): (status, headers, range) = head
        }
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

/// How many file responses run at once: in all on this server, and for one key. Each holds a
/// descriptor or a thread and a chunk of memory until its client has read it, and a client can
/// stop reading; without a cap, 600 unread downloads held 2.5 GB (issue 42).
package final class FileReadLimit: Sendable {
    let total: Int
    let perKey: Int
    private let reading = Mutex<(all: Int, keys: [String: Int])>((0, [:]))

    package init(total: Int, perKey: Int) {
        self.total = total
        self.perKey = perKey
    }

    /// Who is over their share.
    package enum Busy: Error, Equatable {
        /// The key has `perKey` reads out (429: its own doing).
        case key
        /// The server has `total` (503).
        case server
    }

    /// A ticket while the key and the server are under their shares; it gives its place back when
    /// released (the response's body is done, or was dropped).
    package func take(key: String) -> Result<Ticket, Busy> {
        let outcome = reading.withLock { reading -> Busy? in
            if reading.keys[key, default: 0] >= perKey { return .key }
            if reading.all >= total { return .server }
            reading.all += 1
            reading.keys[key, default: 0] += 1
            return nil
        }
        if let outcome { return .failure(outcome) }
        return .success(Ticket(self, key: key))
    }

    fileprivate func giveBack(_ key: String) {
        reading.withLock { reading in
            reading.all -= 1
            let left = reading.keys[key, default: 1] - 1
            reading.keys[key] = left > 0 ? left : nil
        }
    }

    package final class Ticket: Sendable {
        let limit: FileReadLimit
        let key: String
        fileprivate init(_ limit: FileReadLimit, key: String) {
            self.limit = limit
            self.key = key
        }
        deinit { limit.giveBack(key) }
    }
}
