import Foundation
import Synchronization

/// A TCP relay on loopback in front of a database server: the tool connects to the relay, and a
/// test stops the database as far as the tool can tell — every connection closed, new ones
/// refused (``cut()``), or every byte held back (``freeze()``, a server that stopped answering) —
/// then brings it back on the same port. The server itself, and every other client of it, carry on.
final class DatabaseRelay: Sendable {
    /// The relay's port on 127.0.0.1.
    let port: UInt16
    private let upstream: (host: String, port: Int)

    private struct State {
        var listener: Int32 = -1
        /// Both ends of every relayed connection.
        var open: Set<Int32> = []
        var accepted = 0
        /// Bumped by every cut: an accept loop of an earlier generation stops.
        var generation = 0
        /// Nothing is passed on, either way.
        var frozen = false
    }

    private let state = Mutex(State())

    /// A relay to `host`:`port`, listening; `nil` if no loopback port could be had.
    init?(to host: String, port upstreamPort: Int) {
        upstream = (host, upstreamPort)
        guard let (listener, port) = Self.listen(on: 0) else { return nil }
        self.port = port
        state.withLock { $0.listener = listener }
        startAccepting(listener, generation: 0)
    }

    /// Connections relayed so far.
    var accepted: Int { state.withLock { $0.accepted } }

    /// Waits until `count` connections have been relayed, up to `limit`; whether they were.
    func waitForConnections(_ count: Int, limit: Duration = .seconds(120)) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while accepted < count {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    /// The database, as the tool sees it, stops: the relay stops listening and closes both ends of
    /// every connection.
    func cut() {
        state.withLock { state in
            state.frozen = false
            // Under the lock: no descriptor here is closed, and its number reused, meanwhile.
            if state.listener >= 0 {
                shutdown(state.listener, Int32(SHUT_RDWR))
                close(state.listener)
            }
            // The pumps close their descriptors once both ends are shut.
            for descriptor in state.open { shutdown(descriptor, Int32(SHUT_RDWR)) }
            state.listener = -1
            state.open = []
            state.generation += 1
        }
    }

    /// The database stops answering: connections stay open, and nothing passes either way.
    func freeze() { state.withLock { $0.frozen = true } }

    /// The database is back, on the same port.
    func resume() -> Bool {
        guard let (listener, _) = Self.listen(on: port) else { return false }
        let generation = state.withLock { state in
            state.listener = listener
            return state.generation
        }
        startAccepting(listener, generation: generation)
        return true
    }

    deinit { cut() }

    private static func listen(on port: UInt16) -> (Int32, UInt16)? {
        // Close-on-exec, as every descriptor here: a tool the test starts must not hold the port open.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { return nil }
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(port.bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && Glibc.listen(listener, 128) == 0
                    && getsockname(listener, $0, &length) == 0
            }
        }
        guard bound, fcntl(listener, F_SETFL, fcntl(listener, F_GETFL) | O_NONBLOCK) == 0 else {
            close(listener)
            return nil
        }
        return (listener, UInt16(bigEndian: address.sin_port))
    }

    private enum Next {
        case stop, none
        case client(Int32)
    }

    private func startAccepting(_ listener: Int32, generation: Int) {
        Thread { [self] in
            while true {
                var ready = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
                _ = poll(&ready, 1, 100)
                // Under the lock, so that a cut cannot close the listener in between (it does not
                // block: the listener is non-blocking).
                let next: Next = state.withLock { state in
                    guard state.generation == generation else { return .stop }
                    let client = accept(listener, nil, nil)
                    guard client >= 0 else { return .none }
                    _ = fcntl(client, F_SETFD, FD_CLOEXEC)
                    return .client(client)
                }
                guard case .client(let client) = next else {
                    if case .stop = next { return }
                    continue
                }
                guard let server = connectUpstream() else {
                    close(client)
                    continue
                }
                let kept = state.withLock { state in
                    guard state.generation == generation else { return false }
                    state.accepted += 1
                    state.open.formUnion([client, server])
                    return true
                }
                guard kept else {
                    close(client)
                    close(server)
                    return
                }
                Thread { [self] in pump(client, server) }.start()
            }
        }.start()
    }

    private func connectUpstream() -> Int32? {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(upstream.host, String(upstream.port), &hints, &found) == 0, let first = found else { return nil }
        defer { freeaddrinfo(found) }
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let address = entry {
            let descriptor = socket(
                address.pointee.ai_family, address.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue),
                address.pointee.ai_protocol)
            if descriptor >= 0 {
                if connect(descriptor, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 { return descriptor }
                close(descriptor)
            }
            entry = address.pointee.ai_next
        }
        return nil
    }

    /// Copies bytes both ways until either end closes, then closes both.
    private func pump(_ client: Int32, _ server: Int32) {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        var ends = [pollfd(fd: client, events: Int16(POLLIN), revents: 0), pollfd(fd: server, events: Int16(POLLIN), revents: 0)]
        loop: while true {
            guard poll(&ends, 2, -1) > 0 else {
                if errno == EINTR { continue }
                break
            }
            // Frozen: the bytes wait in the sockets until a cut.
            while state.withLock({ $0.frozen }) { usleep(10_000) }
            for (index, end) in ends.enumerated() where end.revents != 0 {
                let count = recv(end.fd, &buffer, buffer.count, 0)
                guard count > 0 else { break loop }
                let other = ends[1 - index].fd
                var offset = 0
                while offset < count {
                    let written = buffer[offset..<count].withUnsafeBytes {
                        send(other, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                    }
                    guard written > 0 else { break loop }
                    offset += written
                }
            }
        }
        state.withLock { $0.open.subtract([client, server]) }
        shutdown(client, Int32(SHUT_RDWR))
        shutdown(server, Int32(SHUT_RDWR))
        close(client)
        close(server)
    }
}
