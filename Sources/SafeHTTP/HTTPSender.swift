import CCurl
import Foundation
import JobctlCore
import Synchronization

/// HTTP over libcurl for webhooks, remote inputs and uploads: http/https only, redirects never
/// followed (a 3xx is a failure), proxies from the environment ignored, bounded time and
/// response size, and every address checked on connect by `AddressPolicy`. Blocking: call it
/// from a thread of its own. Connections are reused per host.
public final class HTTPSender: Sendable {
    public let policy: AddressPolicy
    /// The whole exchange, for POST and GET. A PUT has no overall limit (files can be large):
    /// it fails when fewer than `stallLimit.bytes` per second move for `stallLimit.time`.
    public let timeout: Duration
    public let connectTimeout: Duration
    public let stallLimit: (bytes: Int, time: Duration)
    public let responseLimit: Int
    private let idle = Mutex<[String: [UncheckedHandle]]>([:])

    /// curl_global_init, once, before any thread uses curl.
    private static let initialized: Bool = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK }()

    public init(
        policy: AddressPolicy,
        timeout: Duration = .seconds(15),
        connectTimeout: Duration = .seconds(5),
        stallLimit: (bytes: Int, time: Duration) = (1024, .seconds(60)),
        responseLimit: Int = 64 * 1024
    ) {
        _ = HTTPSender.initialized
        self.policy = policy
        self.timeout = timeout
        self.connectTimeout = connectTimeout
        self.stallLimit = stallLimit
        self.responseLimit = responseLimit
    }

    deinit {
        for handles in idle.withLock({ $0.values }) { for handle in handles { curl_easy_cleanup(handle.pointer) } }
    }

    /// A webhook delivery.
    public func post(_ request: HTTPRequest) -> HTTPResponse { send(request) }

    /// Sends `request`. `shouldAbort` is asked about once a second and whenever data moves;
    /// returning true stops the transfer (`aborted` in the response).
    public func send(_ request: HTTPRequest, shouldAbort: (@Sendable () -> Bool)? = nil) -> HTTPResponse {
        let host = URL(string: request.url)?.host?.lowercased() ?? ""
        let handle = take(host)
        defer { giveBack(handle, host: host) }
        let curl = handle.pointer
        curl_easy_reset(curl)
        let context = Context(policy: policy, limit: responseLimit, shouldAbort: shouldAbort)
        let opaque = Unmanaged.passUnretained(context).toOpaque()

        var headers: UnsafeMutablePointer<curl_slist>? = nil
        for header in request.headers { headers = curl_slist_append(headers, "\(header.name): \(header.value)") }
        defer { curl_slist_free_all(headers) }

        ccurl_setopt_string(curl, CURLOPT_URL, request.url)
        ccurl_setopt_string(curl, CURLOPT_PROTOCOLS_STR, "http,https")
        ccurl_setopt_long(curl, CURLOPT_FOLLOWLOCATION, 0)
        ccurl_setopt_string(curl, CURLOPT_PROXY, "")
        ccurl_setopt_string(curl, CURLOPT_NOPROXY, "*")
        ccurl_setopt_long(curl, CURLOPT_NOSIGNAL, 1)
        ccurl_setopt_long(curl, CURLOPT_CONNECTTIMEOUT_MS, Int(connectTimeout.milliseconds))
        ccurl_setopt_string(curl, CURLOPT_USERAGENT, "jobctl/1")

        switch request.method {
        case .post(let body):
            setBody(curl, body, method: nil, contentType: nil, headers: &headers)
        case .get(let range):
            ccurl_setopt_long(curl, CURLOPT_TIMEOUT_MS, Int(timeout.milliseconds))
            ccurl_setopt_long(curl, CURLOPT_HTTPGET, 1)
            if let range { ccurl_setopt_string(curl, CURLOPT_RANGE, "\(range.lowerBound)-\(range.upperBound)") }
        case .put(let path, let contentType, let range):
            guard let file = FileHandle(forReadingAtPath: path),
                let fileSize = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?
                    .int64Value
            else {
                return HTTPResponse(latency: .zero, failure: HTTPError(.notSent, "\(path) cannot be read"))
            }
            let part = range ?? 0..<fileSize
            guard part.lowerBound >= 0, part.upperBound <= fileSize else {
                try? file.close()
                return HTTPResponse(latency: .zero, failure: HTTPError(.notSent, "\(path) is shorter than \(part)"))
            }
            if part.lowerBound > 0 { _ = lseek(file.fileDescriptor, off_t(part.lowerBound), SEEK_SET) }
            context.upload = file
            context.uploadLimit = Int64(part.count)
            if let contentType { headers = curl_slist_append(headers, "Content-Type: \(contentType)") }
            ccurl_setopt_long(curl, CURLOPT_UPLOAD, 1)
            ccurl_setopt_off(curl, CURLOPT_INFILESIZE_LARGE, curl_off_t(part.count))
            ccurl_setopt_long(curl, CURLOPT_LOW_SPEED_LIMIT, stallLimit.bytes)
            ccurl_setopt_long(curl, CURLOPT_LOW_SPEED_TIME, Int(stallLimit.time.milliseconds / 1000))
            ccurl_setopt_data_function(curl, CURLOPT_READFUNCTION) { data, size, count, opaque in
                let context = Unmanaged<Context>.fromOpaque(opaque!).takeUnretainedValue()
                return context.read(into: data, size * count)
            }
            ccurl_setopt_pointer(curl, CURLOPT_READDATA, opaque)
        case .download(let path):
            guard FileManager.default.createFile(atPath: path, contents: nil),
                let file = FileHandle(forWritingAtPath: path)
            else {
                return HTTPResponse(latency: .zero, failure: HTTPError(.notSent, "\(path) cannot be written"))
            }
            context.download = file
            ccurl_setopt_long(curl, CURLOPT_HTTPGET, 1)
            ccurl_setopt_long(curl, CURLOPT_LOW_SPEED_LIMIT, stallLimit.bytes)
            ccurl_setopt_long(curl, CURLOPT_LOW_SPEED_TIME, Int(stallLimit.time.milliseconds / 1000))
        case .head:
            ccurl_setopt_long(curl, CURLOPT_TIMEOUT_MS, Int(timeout.milliseconds))
            ccurl_setopt_long(curl, CURLOPT_NOBODY, 1)
        case .delete:
            ccurl_setopt_long(curl, CURLOPT_TIMEOUT_MS, Int(timeout.milliseconds))
            ccurl_setopt_string(curl, CURLOPT_CUSTOMREQUEST, "DELETE")
        case .send(let method, let body, let contentType):
            setBody(curl, body, method: method, contentType: contentType, headers: &headers)
        }
        defer {
            try? context.upload?.close()
            try? context.download?.close()
        }
        if shouldAbort != nil {
            ccurl_setopt_long(curl, CURLOPT_NOPROGRESS, 0)
            ccurl_setopt_xferinfo_function(curl) { opaque, _, _, _, _ in
                let context = Unmanaged<Context>.fromOpaque(opaque!).takeUnretainedValue()
                return context.abortRequested() ? 1 : 0
            }
            ccurl_setopt_pointer(curl, CURLOPT_XFERINFODATA, opaque)
        }
        ccurl_setopt_slist(curl, CURLOPT_HTTPHEADER, headers)
        ccurl_setopt_data_function(curl, CURLOPT_WRITEFUNCTION) { data, size, count, opaque in
            let context = Unmanaged<Context>.fromOpaque(opaque!).takeUnretainedValue()
            return context.receive(data, size * count) ? size * count : 0
        }
        ccurl_setopt_pointer(curl, CURLOPT_WRITEDATA, opaque)
        ccurl_setopt_data_function(curl, CURLOPT_HEADERFUNCTION) { data, size, count, opaque in
            let context = Unmanaged<Context>.fromOpaque(opaque!).takeUnretainedValue()
            context.header(data, size * count)
            return size * count
        }
        ccurl_setopt_pointer(curl, CURLOPT_HEADERDATA, opaque)
        // The address guard, on the address actually connected to (DNS rebinding cannot slip past).
        ccurl_setopt_opensocket_function(curl) { opaque, _, address in
            let context = Unmanaged<Context>.fromOpaque(opaque!).takeUnretainedValue()
            guard let address else { return ccurl_socket_bad() }
            let target = withUnsafePointer(to: &address.pointee.addr) { IPAddress(socketAddress: $0) }
            if let target, let refusal = context.policy.refusal(for: target) {
                context.refusal = "\(target) is \(refusal)"
                return ccurl_socket_bad()
            }
            return socket(address.pointee.family, address.pointee.socktype, address.pointee.protocol)
        }
        ccurl_setopt_pointer(curl, CURLOPT_OPENSOCKETDATA, opaque)

        let started = ContinuousClock.now
        let code = curl_easy_perform(curl)
        let latency = ContinuousClock.now - started
        var status = 0
        ccurl_getinfo_long(curl, CURLINFO_RESPONSE_CODE, &status)
        let body = String(decoding: context.body, as: UTF8.self)
        var response = HTTPResponse(latency: latency)
        response.uploaded = context.uploaded
        response.headers = context.headers
        // Refused only if nothing got through: curl may skip a forbidden address of a host and
        // connect to an allowed one.
        if code != CURLE_OK, let refusal = context.refusal {
            response.failure = HTTPError(.refused, "refused: \(host) resolves to \(refusal)")
            return response
        }
        if code == CURLE_ABORTED_BY_CALLBACK {
            response.failure = HTTPError(.aborted, "stopped")
            return response
        }
        response.body = body
        response.data = context.body
        guard code == CURLE_OK else {
            // Only a final status counts: `100 Continue` and then silence is a network failure.
            response.statusCode = status >= 200 ? status : nil
            response.timedOut = code == CURLE_OPERATION_TIMEDOUT
            let rejected = code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CACERT_BADFILE
            response.failure = HTTPError(
                rejected ? .certificateRejected : .transport,
                context.writeFailure ?? String(cString: curl_easy_strerror(code))
            )
            return response
        }
        response.statusCode = status
        response.retryAfter = context.retryAfter
        if !(200..<300).contains(status) {
            response.failure = HTTPError(
                .status,
                (300..<400).contains(status) ? "HTTP \(status): redirects are not followed" : "HTTP \(status)"
            )
        }
        return response
    }

    /// A body held in memory, sent whole (no `Expect: 100-continue`), with `method` when it is
    /// not POST.
    private func setBody(
        _ curl: UnsafeMutableRawPointer,
        _ body: Data,
        method: String?,
        contentType: String?,
        headers: inout UnsafeMutablePointer<curl_slist>?
    ) {
        ccurl_setopt_long(curl, CURLOPT_TIMEOUT_MS, Int(timeout.milliseconds))
        headers = curl_slist_append(headers, "Expect:")
        if let contentType { headers = curl_slist_append(headers, "Content-Type: \(contentType)") }
        ccurl_setopt_long(curl, CURLOPT_POST, 1)
        if let method { ccurl_setopt_string(curl, CURLOPT_CUSTOMREQUEST, method) }
        ccurl_setopt_long(curl, CURLOPT_POSTFIELDSIZE, body.count)
        _ = body.withUnsafeBytes { bytes in
            ccurl_setopt_pointer(
                curl,
                CURLOPT_COPYPOSTFIELDS,
                UnsafeMutableRawPointer(mutating: bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!)
            )
        }
    }

    /// A handle last used for `host` (its connection may be reused), or a new one.
    private func take(_ host: String) -> UncheckedHandle {
        if let handle = idle.withLock({ $0[host]?.popLast() }) { return handle }
        guard let handle = curl_easy_init() else { fatalError("curl_easy_init failed") }
        return UncheckedHandle(pointer: handle)
    }

    private func giveBack(_ handle: UncheckedHandle, host: String) {
        let surplus = idle.withLock { idle -> UncheckedHandle? in
            if idle[host, default: []].count >= 8 { return handle }
            idle[host, default: []].append(handle)
            return nil
        }
        if let surplus { curl_easy_cleanup(surplus.pointer) }
    }

    /// Per-request state the C callbacks reach through their opaque pointer.
    /// Sendable: one transfer uses it, on the one thread that runs `curl_easy_perform` (where the
    /// callbacks run too); it is read after the transfer returns, on that same thread.
    private final class Context: @unchecked Sendable {
        let policy: AddressPolicy
        let limit: Int
        let shouldAbort: (@Sendable () -> Bool)?
        var body = Data()
        var retryAfter: Duration?
        var refusal: String?
        var upload: FileHandle?
        /// Where a 2xx answer's body goes (`download`).
        var download: FileHandle?
        /// The status of the answer being received (from its status line).
        var status = 0
        /// Why the download's file could not take the body.
        var writeFailure: String?
        /// How many bytes of `upload` to send.
        var uploadLimit: Int64 = .max
        var uploaded: Int64 = 0
        var headers: [String: String] = [:]

        init(policy: AddressPolicy, limit: Int, shouldAbort: (@Sendable () -> Bool)?) {
            self.policy = policy
            self.limit = limit
            self.shouldAbort = shouldAbort
        }

        func abortRequested() -> Bool { shouldAbort?() ?? false }

        /// The next bytes of the file being uploaded.
        func read(into buffer: UnsafeMutablePointer<CChar>?, _ capacity: Int) -> Int {
            guard let buffer, let upload else { return ccurl_readfunc_abort() }
            if abortRequested() { return ccurl_readfunc_abort() }
            let wanted = Int(min(Int64(capacity), uploadLimit - uploaded))
            guard wanted > 0 else { return 0 }
            let count = Glibc.read(upload.fileDescriptor, buffer, wanted)
            guard count >= 0 else { return ccurl_readfunc_abort() }
            uploaded += Int64(count)
            return count
        }

        /// Keeps `count` bytes of the body; `false` stops the transfer (a download's file could
        /// not be written: a full disk).
        func receive(_ data: UnsafeMutablePointer<CChar>?, _ count: Int) -> Bool {
            guard let data else { return true }
            if let download, (200..<300).contains(status) {
                var written = 0
                while written < count {
                    let result = Glibc.write(download.fileDescriptor, data + written, count - written)
                    guard result > 0 else {
                        writeFailure = "the download could not be written: \(String(cString: strerror(errno)))"
                        return false
                    }
                    written += result
                }
                return true
            }
            guard body.count < limit else { return true }
            body.append(
                UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self),
                count: min(count, limit - body.count)
            )
            return true
        }

        func header(_ data: UnsafeMutablePointer<CChar>?, _ count: Int) {
            guard let data else { return }
            let line = String(decoding: UnsafeRawBufferPointer(start: data, count: count), as: UTF8.self)
            // A new response (after `100 Continue`) starts with its status line.
            if line.hasPrefix("HTTP/") {
                headers = [:]
                status = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
            }
            if let colon = line.firstIndex(of: ":"), headers.count < 100 {
                let name = line[..<colon].lowercased()
                headers[name] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
            }
            guard line.lowercased().hasPrefix("retry-after:") else { return }
            let value = line.dropFirst("retry-after:".count).trimmingCharacters(in: .whitespacesAndNewlines)
            if let seconds = Int(value) {
                retryAfter = .seconds(max(0, seconds))
            } else if let date = HTTPSender.httpDate(value) {
                retryAfter = .milliseconds(Int64(max(0, date.timeIntervalSinceNow) * 1000))
            }
        }
    }

    /// Sendable: a CURL handle serves one request at a time; idle ones wait in `idle`, behind a mutex.
    private struct UncheckedHandle: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
    }

    static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text)
    }
}
