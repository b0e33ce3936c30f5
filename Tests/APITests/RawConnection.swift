import Foundation
import MediaTestKit

/// A TCP connection to the test server on loopback that sends exactly the bytes it is given
/// and reads only when asked: a body without a declared length, or a client that stops reading.
/// Its calls block, so they run on threads of their own (`onThread`): a blocked cooperative
/// thread would starve the server under test, which runs in this process (two blocked reads
/// hung a CI run on two cores).
final class RawConnection: @unchecked Sendable {
    let descriptor: Int32

    init(port: Int, receiveBuffer: Int32? = nil) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.EMFILE) }
        if var size = receiveBuffer {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        // A read that gets nothing for a minute gives up (the test then fails, it does not hang).
        var patience = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &patience, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(descriptor)
            throw POSIXError(.ECONNREFUSED)
        }
    }

    deinit { close(descriptor) }

    /// Connects on a thread of its own.
    static func open(port: Int, receiveBuffer: Int32? = nil) async throws -> RawConnection {
        try await onThread { try RawConnection(port: port, receiveBuffer: receiveBuffer) }
    }

    /// Sends `text`, then reads until `marker` has come: on a thread of its own.
    func exchange(_ text: String, until marker: String) async throws -> String {
        try await onThread { [self] in
            send(text)
            return read(until: marker)
        }
    }

    private func send(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let sent = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { return }
            bytes = bytes.dropFirst(sent)
        }
    }

    /// Reads until `marker` has come (or the connection ends): what came.
    private func read(until marker: String) -> String {
        var received = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !String(decoding: received, as: UTF8.self).contains(marker) {
            let count = recv(descriptor, &buffer, 1, 0)
            guard count > 0 else { break }
            received += buffer[0..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }
}
