import CCurl
import Foundation
import Synchronization

/// A POST to send: the exact body bytes and the headers.
public struct HTTPRequest: Sendable {
    public var url: String
    public var body: Data
    public var headers: [(name: String, value: String)]

    public init(url: String, body: Data, headers: [(name: String, value: String)]) {
        self.url = url
        self.body = body
        self.headers = headers
    }
}

/// What came back (or why nothing did).
public struct HTTPResponse: Sendable {
    /// `nil` when no HTTP response arrived (refused, unreachable, timed out).
    public var statusCode: Int?
    /// The server's `Retry-After`, if it sent one.
    public var retryAfter: Duration?
    public var latency: Duration
    /// Why the request failed, for the delivery log.
    public var error: String?
    /// The address guard refused the address the host resolved to.
    public var refused: Bool
    /// The start of the response body (capped).
    public var body: String

    public var succeeded: Bool { statusCode.map { (200..<300).contains($0) } ?? false }
}

/// HTTP over libcurl for webhooks (and, later, uploads): http/https only, redirects never
/// followed (a 3xx is a failure), proxies from the environment ignored, bounded time and
/// response size, and every address checked on connect by `AddressPolicy`. Blocking: call it
/// from a thread of its own. Connections are reused per host.
public final class HTTPSender: Sendable {
    public let policy: AddressPolicy
    public let timeout: Duration
    public let connectTimeout: Duration
    public let responseLimit: Int
    private let idle = Mutex<[String: [UncheckedHandle]]>([:])

    /// curl_global_init, once, before any thread uses curl.
    private static let initialized: Bool = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK }()

    public init(policy: AddressPolicy, timeout: Duration = .seconds(15), connectTimeout: Duration = .seconds(5), responseLimit: Int = 64 * 1024) {
        _ = HTTPSender.initialized
        self.policy = policy
        self.timeout = timeout
        self.connectTimeout = connectTimeout
        self.responseLimit = responseLimit
    }

    deinit {
        for handles in idle.withLock({ $0.values }) { for handle in handles { curl_easy_cleanup(handle.pointer) } }
    }

    public func post(_ request: HTTPRequest) -> HTTPResponse {
        let host = URL(string: request.url)?.host?.lowercased() ?? ""
        let handle = take(host)
        defer { giveBack(handle, host: host) }
        let curl = handle.pointer
        curl_easy_reset(curl)
        let context = Context(policy: policy, limit: responseLimit)
        let opaque = Unmanaged.passUnretained(context).toOpaque()

        var headers: UnsafeMutablePointer<curl_slist>? = nil
        for header in request.headers { headers = curl_slist_append(headers, "\(header.name): \(header.value)") }
        headers = curl_slist_append(headers, "Content-Type: application/json")
        headers = curl_slist_append(headers, "Expect:")
        defer { curl_slist_free_all(headers) }

        ccurl_setopt_string(curl, CURLOPT_URL, request.url)
        ccurl_setopt_string(curl, CURLOPT_PROTOCOLS_STR, "http,https")
        ccurl_setopt_long(curl, CURLOPT_FOLLOWLOCATION, 0)
        ccurl_setopt_string(curl, CURLOPT_PROXY, "")
        ccurl_setopt_string(curl, CURLOPT_NOPROXY, "*")
        ccurl_setopt_long(curl, CURLOPT_NOSIGNAL, 1)
        ccurl_setopt_long(curl, CURLOPT_TIMEOUT_MS, Int(timeout.milliseconds))
        ccurl_setopt_long(curl, CURLOPT_CONNECTTIMEOUT_MS, Int(connectTimeout.milliseconds))
        ccurl_setopt_string(curl, CURLOPT_USERAGENT, "jobctl-webhooks/1")
        ccurl_setopt_long(curl, CURLOPT_POST, 1)
        ccurl_setopt_long(curl, CURLOPT_POSTFIELDSIZE, request.body.count)
        _ = request.body.withUnsafeBytes { bytes in
            ccurl_setopt_pointer(curl, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!))
        }
        ccurl_setopt_slist(curl, CURLOPT_HTTPHEADER, headers)
        ccurl_setopt_data_function(curl, CURLOPT_WRITEFUNCTION) { data, size, count, opaque in
            let context = Unmanaged<Context>.fromOpaque(opaque!).takeUnretainedValue()
            context.receive(data, size * count)
            return size * count
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
        // Refused only if nothing got through: curl may skip a forbidden address of a host and
        // connect to an allowed one.
        if code != CURLE_OK, let refusal = context.refusal {
            return HTTPResponse(statusCode: nil, retryAfter: nil, latency: latency, error: "refused: \(host) resolves to \(refusal)", refused: true, body: "")
        }
        guard code == CURLE_OK else {
            return HTTPResponse(
                statusCode: status > 0 ? status : nil, retryAfter: nil, latency: latency,
                error: String(cString: curl_easy_strerror(code)), refused: false, body: body
            )
        }
        var error: String?
        if !(200..<300).contains(status) {
            error = (300..<400).contains(status) ? "HTTP \(status): redirects are not followed" : "HTTP \(status)"
        }
        return HTTPResponse(statusCode: status, retryAfter: context.retryAfter, latency: latency, error: error, refused: false, body: body)
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
    private final class Context: @unchecked Sendable {
        let policy: AddressPolicy
        let limit: Int
        var body = Data()
        var retryAfter: Duration?
        var refusal: String?

        init(policy: AddressPolicy, limit: Int) {
            self.policy = policy
            self.limit = limit
        }

        func receive(_ data: UnsafeMutablePointer<CChar>?, _ count: Int) {
            guard let data, body.count < limit else { return }
            body.append(UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: min(count, limit - body.count))
        }

        func header(_ data: UnsafeMutablePointer<CChar>?, _ count: Int) {
            guard let data else { return }
            let line = String(decoding: UnsafeRawBufferPointer(start: data, count: count), as: UTF8.self)
            guard line.lowercased().hasPrefix("retry-after:") else { return }
            let value = line.dropFirst("retry-after:".count).trimmingCharacters(in: .whitespacesAndNewlines)
            if let seconds = Int(value) {
                retryAfter = .seconds(max(0, seconds))
            } else if let date = HTTPSender.httpDate(value) {
                retryAfter = .milliseconds(Int64(max(0, date.timeIntervalSinceNow) * 1000))
            }
        }
    }

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

extension Duration {
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
