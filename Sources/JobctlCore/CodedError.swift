/// The one shape of jobctl's errors, as swift-nio's `FileSystemError`: a code (a struct, so
/// codes can be added without breaking anyone's `switch`: `ErrorCode`, the one vocabulary, for
/// every error a person reads; `HTTPError` and `S3Error` wrap a private enum of their own), a
/// message a person can act on, the error underneath (`cause`), and where it was thrown.
///
/// `description` is the line the CLI prints after `error: ` (`input_not_found: /data/in.mov
/// does not exist`); `debugDescription` adds the location and the chain of causes, for logs.
public protocol CodedError: Error, CustomStringConvertible, CustomDebugStringConvertible {
    associatedtype Code: Hashable & Sendable & CustomStringConvertible
    var code: Code { get }
    var message: String { get }
    /// The error underneath, if any: an FFmpeg or system error, a database driver's error.
    var cause: (any Error)? { get }
    var location: ErrorLocation { get }
}

extension CodedError {
    public var description: String { "\(code): \(message)" }

    public var debugDescription: String {
        var text = "\(code): \(message) (at \(location))"
        if let cause { text += " caused by \(String(reflecting: cause))" }
        return text
    }
}

/// Where an error was made: `#fileID` and `#line` of the throw site.
public struct ErrorLocation: Sendable, Hashable, CustomStringConvertible {
    public var file: String
    public var line: Int

    public init(file: String = #fileID, line: Int = #line) {
        self.file = file
        self.line = line
    }

    public var description: String { "\(file):\(line)" }
}

/// A cause that is only text: what FFmpeg, libcurl or the system said.
public struct ErrorDetail: Error, Sendable, Hashable, CustomStringConvertible {
    public var description: String

    public init(_ description: String) { self.description = description }
}
