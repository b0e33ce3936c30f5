import Dashboard
import Foundation
import Hummingbird
import JobAPI
import JobKinds
import JobctlCore
import NIOCore
import NIOPosix
import Queue

/// A completed job's local output files, served to the dashboard's pages (the MP4 in a
/// `<video>`, thumbnails, a ladder playing): only the files the job's result names, only for a
/// session that may see the job, only under the job's own output directory after following
/// links, with byte ranges (a `<video>` seeks with them).
extension DashboardRoutes {
    /// The names of a completed job's files: those its result lists (file sets), or its output's
    /// name (an export).
    static func fileNames(of job: Job) -> [String] {
        // Outputs at http(s) URLs are not read back; those in a bucket are (DashboardObjects).
        guard job.status == .completed, !MediaLocation.isRemote(job.output) || MediaLocation.isObjectStore(job.output)
        else { return [] }
        if let files = job.result?["files"]?.arrayValue {
            return files.compactMap { $0["name"]?.stringValue }
        }
        let writesOneFile = JobKinds.named(job.kind).map { !$0.writesFileSet } ?? false
        return writesOneFile ? [(job.output as NSString).lastPathComponent] : []
    }

    /// The job's output as a worker resolves it (the key's directory or prefix), if `name` is
    /// one of its files; `nil` when it is not, or the output is not the key's to read.
    func resolvedOutput(_ name: String, of job: Job) -> JobPaths? {
        guard Self.fileNames(of: job).contains(name), !name.contains("/"), name != "..", name != "." else { return nil }
        // Only the output matters here: a stand-in input keeps an input this server cannot
        // place from refusing the lookup.
        var outputOnly = job
        outputOnly.input = "https://input.invalid/"
        return try? JobPaths.resolve(
            outputOnly,
            inputRoot: nil,
            outputRoot: confinement.outputRoot,
            objectRoot: confinement.objectRoot
        )
    }

    /// The file `name` of the job on this host, opened: only if it is one of its files, is a
    /// regular file with no other name (a hard link is refused), and sits in the job's own output
    /// directory. The directory is opened and checked through its descriptor, and the file
    /// opened relative to it without following a link: what is checked is what is served,
    /// whatever is renamed or swapped in meanwhile (issue 42).
    func openLocalFile(_ name: String, of job: Job) -> OpenedFile? {
        guard !MediaLocation.isObjectStore(job.output), let paths = resolvedOutput(name, of: job) else { return nil }
        let isSet = job.result?["files"] != nil
        let directory = isSet ? paths.output : PathText.parent(of: paths.output)
        let leaf = isSet ? name : (paths.output as NSString).lastPathComponent
        guard !leaf.isEmpty, !leaf.contains("/"), leaf != ".", leaf != ".." else { return nil }
        let folder = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard folder >= 0 else { return nil }
        defer { close(folder) }
        let real = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(folder)")
        guard (try? paths.confinement.checkOpenedOutputDirectory(real, shownAs: directory)) != nil else { return nil }
        return OpenedFile(in: folder, named: leaf)
    }

    /// Whether the job has the local file `name` to serve.
    func hasLocalFile(_ name: String, of job: Job) -> Bool { openLocalFile(name, of: job) != nil }

    /// A waveform job's peaks drawn for its page, when its `peaks.json` is here and small
    /// enough (`WaveformSVG.maximumBytes`).
    func waveform(of job: Job) -> String? {
        guard job.status == .completed, let file = openLocalFile(WaveformSVG.peaksName, of: job),
            file.size <= WaveformSVG.maximumBytes, let data = file.read(at: 0, count: file.size),
            data.count == file.size
        else { return nil }
        return WaveformSVG.draw(data)
    }

    func file(_ request: Request, _ context: DashboardRequestContext, _ session: Session) async throws -> Response {
        guard let id = try? JobRoutes.jobID(context), let job = try await store.job(id),
            JobRoutes.visible(job, to: session.key), let name = context.parameters.get("name")
        else {
            return refusal(session, "There is no such file of a job of yours on this server.", status: .notFound)
        }
        if job.status == .completed, let object = objectFile(name, of: job) {
            return try await objectResponse(request, session, name: name, object)
        }
        guard let file = openLocalFile(name, of: job) else {
            return refusal(session, "There is no such file of a job of yours on this server.", status: .notFound)
        }
        let ticket: FileReadLimit.Ticket
        switch localReads.take(key: session.key.id) {
        case .success(let taken): ticket = taken
        case .failure(let busy): return busyRefusal(session, busy)
        }
        let (status, headers, range): (HTTPResponse.Status, HTTPFields, ClosedRange<Int>)
        switch Self.fileHead(request, name: name, size: file.size) {
        case .answered(let response): return response
        case .body(let head): (status, headers, range) = head
        }
        return Response(
            status: status,
            headers: headers,
            body: ResponseBody(contentLength: range.count) { [range, file, ticket] writer in
                withExtendedLifetime(ticket) {}
                var offset = range.lowerBound
                while offset <= range.upperBound {
                    let count = min(Self.fileChunk, range.upperBound - offset + 1)
                    let at = offset
                    let data = try await NIOThreadPool.singleton.runIfActive { file.read(at: at, count: count) }
                    // The file shrank under us: the response ends short rather than padded.
                    guard let data, data.count == count else { throw HTTPError(.internalServerError) }
                    try await writer.write(ByteBuffer(bytes: data))
                    offset += count
                }
                try await writer.finish(nil)
            }
        )
    }

    /// How much of a local file one write to the connection takes.
    static let fileChunk = 128 << 10

    /// A refusal for a read past its key's share (429) or past the server's (503).
    func busyRefusal(_ session: Session, _ busy: FileReadLimit.Busy) -> Response {
        var response =
            switch busy {
            case .key:
                refusal(session, "This key is reading too many files at once; try again.", status: .tooManyRequests)
            case .server:
                refusal(session, "Too many files are being read; try again.", status: .serviceUnavailable)
            }
        response.headers[.retryAfter] = busy == .key ? "2" : "5"
        return response
    }

    /// A file response's head: the whole file or the one byte range asked for, or an answer with
    /// no body to send (416 for a range outside the file, an empty file).
    enum FileHead {
        case body((status: HTTPResponse.Status, headers: HTTPFields, range: ClosedRange<Int>))
        case answered(Response)
    }

    /// The head of the response sending the file `name` of `size` bytes (local or in a bucket).
    static func fileHead(_ request: Request, name: String, size: Int) -> FileHead {
        var headers = fileHeaders(name)
        headers[.acceptRanges] = "bytes"
        var range = 0...max(0, size - 1)
        var status = HTTPResponse.Status.ok
        if let header = request.headers[.range], size > 0 {
            guard let asked = byteRange(header, size: size) else {
                headers[.contentRange] = "bytes */\(size)"
                return .answered(Response(status: .rangeNotSatisfiable, headers: headers))
            }
            range = asked
            status = .partialContent
            headers[.contentRange] = "bytes \(asked.lowerBound)-\(asked.upperBound)/\(size)"
        }
        headers[.contentLength] = "\(size == 0 ? 0 : range.count)"
        guard size > 0 else { return .answered(Response(status: status, headers: headers)) }
        return .body((status, headers, range))
    }

    /// `bytes=A-B`, `bytes=A-` or `bytes=-N` within a file of `size` bytes; one range only.
    static func byteRange(_ header: String, size: Int) -> ClosedRange<Int>? {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let parts = header.dropFirst("bytes=".count).split(
            separator: "-",
            maxSplits: 1,
            omittingEmptySubsequences: false
        )
        guard parts.count == 2 else { return nil }
        let (first, last) = (Int(parts[0]), Int(parts[1]))
        switch (parts[0].isEmpty, parts[1].isEmpty) {
        case (true, false):
            guard let count = last, count > 0 else { return nil }
            return max(0, size - count)...(size - 1)
        case (false, _):
            guard let start = first, start >= 0, start < size else { return nil }
            let end = parts[1].isEmpty ? size - 1 : min(last ?? -1, size - 1)
            return end >= start ? start...end : nil
        default:
            return nil
        }
    }

    /// What a file is served as: media and images inline, anything else as a download; never
    /// as a page of this origin (a sandbox with nothing allowed; a ladder's `player.html` is
    /// a download here, not a page).
    static func fileHeaders(_ name: String) -> HTTPFields {
        let type = ContentType.of(name).flatMap { $0.hasPrefix("text/html") ? nil : $0 }
        return [
            .contentType: type ?? "application/octet-stream",
            .contentDisposition: type == nil ? "attachment" : "inline",
            .contentSecurityPolicy: "default-src 'none'; sandbox",
            .xContentTypeOptions: "nosniff",
            .cacheControl: "private, max-age=60",
        ]
    }
}

/// A file opened once for a response: read by offset, closed when the last reference goes (the
/// response's body, or the handler that refused it).
final class OpenedFile: Sendable {
    let descriptor: Int32
    let size: Int

    /// `name` in the directory `folder`, opened without following a link: only a regular file
    /// with no other name (a hard link could be another tenant's file).
    init?(in folder: Int32, named name: String) {
        let descriptor = openat(folder, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_nlink == 1 else {
            close(descriptor)
            return nil
        }
        self.descriptor = descriptor
        size = Int(status.st_size)
    }

    deinit { close(descriptor) }

    /// Up to `count` bytes at `offset` (fewer at the end of the file); `nil` on an error.
    func read(at offset: Int, count: Int) -> Data? {
        var data = Data(count: count)
        var done = 0
        while done < count {
            let got = data.withUnsafeMutableBytes { buffer in
                pread(descriptor, buffer.baseAddress! + done, count - done, off_t(offset + done))
            }
            if got < 0 && errno == EINTR { continue }
            guard got >= 0 else { return nil }
            if got == 0 { break }
            done += got
        }
        return data.prefix(done)
    }
}
