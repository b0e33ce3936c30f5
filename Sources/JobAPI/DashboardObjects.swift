import Dashboard
import Foundation
import Hummingbird
import JobKinds
import JobctlCore
import NIOCore
import ObjectStorage
import Queue

/// A job's files in a bucket (`s3://`), on its page as local ones are: the server reads them
/// with its own object store credentials (the workers' environment: docs/object-storage.md)
/// and streams them to the session, 4 MiB at a time, byte ranges included (a `<video>` seeks
/// with them). Nothing of the store reaches the browser: no pre-signed URL, no signature.
/// Only names the job's result lists, of a job the session may see, inside the key's prefix
/// of `--s3-root` (checked as a worker checks it).
extension DashboardRoutes {
    /// How much of an object one request to the store asks for (its response limit).
    static let objectChunk: Int64 = 4 << 20

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
            body: ResponseBody { [range] writer in
                var offset = Int64(range.lowerBound)
                let last = Int64(range.upperBound)
                while offset <= last {
                    let chunk = offset...min(offset + Self.objectChunk - 1, last)
                    let data = try await onDedicatedThread("jobctl.dashboard.s3") {
                        try store.get(object, range: chunk)
                    }
                    guard !data.isEmpty else {
                        logger.warning("The bucket sent nothing for a range", metadata: ["object": "\(object)"])
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
