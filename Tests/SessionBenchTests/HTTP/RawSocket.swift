#if HTTP
import Foundation


/// Runs blocking work on a thread of its own, never on the cooperative pool: the server under
/// test answers on that pool, and a test blocking it in `poll` would keep its own answer out.
func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}

/// A plain TCP client on loopback, byte by byte: what a garbage-sending or slowloris client is.
/// Used by one test at a time; its descriptor never changes.
final class RawSocket: @unchecked Sendable {
    let descriptor: Int32

    /// Connects to 127.0.0.1:`port`; `nil` if the connection was refused.
    init?(port: Int) {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(socketFD)
            return nil
        }
        descriptor = socketFD
    }

    deinit { close(descriptor) }

    /// Sends every byte; `false` if the server closed the connection.
    @discardableResult
    func transmit(_ text: String) -> Bool { transmit(Array(text.utf8)) }

    @discardableResult
    func transmit(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    /// What arrives until the server closes the connection, `until` is seen, or `timeout` passes.
    /// `closed` is whether the server closed it.
    func receive(until marker: String? = nil, timeout: Double) async -> (text: String, closed: Bool) {
        await offPool { self.waitForAnswer(until: marker, timeout: timeout) }
    }

    private func waitForAnswer(until marker: String?, timeout: Double) -> (text: String, closed: Bool) {
        var received: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(max(1, deadline.timeIntervalSinceNow * 1000)))
            if ready < 0, errno == EINTR { continue }
            guard ready > 0 else { break }
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count < 0, errno == EINTR { continue }
            if count <= 0 { return (String(decoding: received, as: UTF8.self), true) }
            received += buffer[..<count]
            if let marker, String(decoding: received, as: UTF8.self).contains(marker) { break }
        }
        return (String(decoding: received, as: UTF8.self), false)
    }
}

/// Raises this process's open-file limit to its hard limit, for tests that hold many sockets.
func raiseOpenFileLimit() {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    limit.rlim_cur = limit.rlim_max
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}

/// The open-file limit now.
func openFileLimit() -> Int {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    return Int(limit.rlim_cur)
}
#endif
