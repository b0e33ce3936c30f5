import CFFmpeg

/// A negative return code of an FFmpeg call, with the call that returned it.
struct FFError: Error, Sendable, CustomStringConvertible {
    let code: Int32
    let operation: String

    var description: String { "\(operation): \(FFError.message(for: code))" }

    static func message(for code: Int32) -> String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { buffer in
            _ = cff_err2str(code, buffer.baseAddress, 256)
            return String(cString: buffer.baseAddress!)
        }
    }

    var isExit: Bool { code == cff_averror_exit() }
    /// The output's file system or device failed (see `AVErr.outputIO`).
    var isOutputIO: Bool { AVErr.outputIO.contains(code) }
}

/// Throws an `FFError` when `result` is negative; returns it otherwise.
@discardableResult
func check(_ result: Int32, _ operation: @autoclosure () -> String) throws -> Int32 {
    if result < 0 { throw FFError(code: result, operation: operation()) }
    return result
}

enum AVErr {
    static let eof = cff_averror_eof()
    static let again = cff_averror_eagain()
    static let exit = cff_averror_exit()
    static let invalidData = cff_averror_invaliddata()
    static let noEntry = cff_averror_enoent()
    static let accessDenied = cff_averror_eacces()
    static let permission = cff_averror_errno(EPERM)
    static let noSpace = cff_averror_enospc()
    static let httpNotFound = cff_averror_http_not_found()
    static let httpForbidden = cff_averror_http_forbidden()
    static let httpUnauthorized = cff_averror_http_unauthorized()
    static let httpBadRequest = cff_averror_http_bad_request()
    static let httpOther4xx = cff_averror_http_other_4xx()
    static let httpServerError = cff_averror_http_server_error()
    /// Failures of the output's file system or device (a full disk, a quota, an I/O error, a
    /// read-only or vanished mount): the output side, worth another attempt later. Anything
    /// else a muxer returns is about the packets it was given.
    static let outputIO: Set<Int32> = Set(
        [ENOSPC, EDQUOT, EIO, EFBIG, EROFS, EACCES, EPERM, ENOENT, ENXIO, EBADF, ESTALE, ENOTCONN].map(
            cff_averror_errno
        )
    )
    /// Network failures worth another attempt later: the server or the path to it is down.
    static let transientNetwork: Set<Int32> = Set(
        [ECONNREFUSED, ECONNRESET, ETIMEDOUT, EHOSTUNREACH, ENETUNREACH, ENETDOWN, EPIPE, EIO, EAGAIN].map(
            cff_averror_errno
        )
    ).union([cff_averror_http_server_error()])
}

let noPTS: Int64 = cff_nopts_value()
let microsecondBase = AVRational(num: 1, den: 1_000_000)

extension AVRational {
    var double: Double { den == 0 ? 0 : Double(num) / Double(den) }
    var isValid: Bool { num > 0 && den > 0 }
}

/// A time base is two `Int32`s: safe to send anywhere (the C import does not say so).
extension AVRational: @retroactive @unchecked Sendable {}
