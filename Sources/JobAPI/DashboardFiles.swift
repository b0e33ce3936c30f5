import Dashboard
import Foundation
import Hummingbird
import JobKinds
import JobctlCore
import NIOCore
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
        return job.kind == .export ? [(job.output as NSString).lastPathComponent] : []
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

    /// The file `name` of the job on this host, if it is one of its files and inside its output.
    func localFile(_ name: String, of job: Job) -> String? {
        guard !MediaLocation.isObjectStore(job.output), let paths = resolvedOutput(name, of: job) else { return nil }
        let path = job.result?["files"] == nil ? paths.output : (paths.output as NSString).appendingPathComponent(name)
        guard (try? paths.confinement.checkOutput(path)) != nil else { return nil }
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        return path
    }

    /// A waveform job's peaks drawn for its page, when its `peaks.json` is here and small
    /// enough (`WaveformSVG.maximumBytes`).
    func waveform(of job: Job) -> String? {
        guard job.status == .completed, let path = localFile(WaveformSVG.peaksName, of: job),
            Self.fileSize(path) <= WaveformSVG.maximumBytes,
            let handle = FileHandle(forReadingAtPath: path)
        else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: WaveformSVG.maximumBytes + 1) else { return nil }
        return WaveformSVG.draw(data)
    }

    func file(_ request: Request, _ context: APIRequestContext, _ session: Session) async throws -> Response {
        guard let id = try? JobRoutes.jobID(context), let job = try await store.job(id),
            JobRoutes.visible(job, to: session.key), let name = context.parameters.get("name")
        else {
            return refusal(session, "There is no such file of a job of yours on this server.", status: .notFound)
        }
        if job.status == .completed, let object = objectFile(name, of: job) {
            return try await objectResponse(request, session, name: name, object)
        }
        guard let path = localFile(name, of: job) else {
            return refusal(session, "There is no such file of a job of yours on this server.", status: .notFound)
        }
        var headers = Self.fileHeaders(name)
        let size = Self.fileSize(path)
        headers[.acceptRanges] = "bytes"
        if let header = request.headers[.range], size > 0 {
            guard let range = Self.byteRange(header, size: size) else {
                headers[.contentRange] = "bytes */\(size)"
                return Response(status: .rangeNotSatisfiable, headers: headers)
            }
            headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(size)"
            headers[.contentLength] = "\(range.count)"
            let body = try await FileIO().loadFile(path: path, range: range, context: context)
            return Response(status: .partialContent, headers: headers, body: body)
        }
        headers[.contentLength] = "\(size)"
        return Response(status: .ok, headers: headers, body: try await FileIO().loadFile(path: path, context: context))
    }

    static func fileSize(_ path: String) -> Int {
        var status = stat()
        return stat(path, &status) == 0 ? Int(status.st_size) : 0
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
    /// as a page of this origin (a sandbox with nothing allowed).
    static func fileHeaders(_ name: String) -> HTTPFields {
        let types = [
            "mp4": "video/mp4", "m4v": "video/mp4", "mov": "video/quicktime", "m4a": "audio/mp4",
            "m4s": "video/iso.segment", "m3u8": "application/vnd.apple.mpegurl", "mpd": "application/dash+xml",
            "jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "webp": "image/webp",
            "vtt": "text/vtt; charset=utf-8", "json": "application/json",
        ]
        let type = types[(name as NSString).pathExtension.lowercased()]
        return [
            .contentType: type ?? "application/octet-stream",
            .contentDisposition: type == nil ? "attachment" : "inline",
            .contentSecurityPolicy: "default-src 'none'; sandbox",
            .xContentTypeOptions: "nosniff",
            .cacheControl: "private, max-age=60",
        ]
    }
}
