#if HTTP
import Foundation
internal import HTTPTypes
internal import Hummingbird
internal import HummingbirdCore
internal import Logging
internal import NIOCore
internal import ServiceLifecycle
import SessionBench
import SessionContract
import SessionSync
import Synchronization
import TokenServer

/// Token servers over HTTP/1.1 on loopback: the OAuth token endpoint, a protected resource, the
/// metadata a client discovers them by, and an admin path for the ledger's verdicts.
///
/// One server can be served at the root (`serve`), and any number under `/s/ID/` (the HTTP
/// transport registers each scenario's server there). Every request's cost is bounded: a
/// connection that has not sent a whole request head within ``Limits/idleTimeout`` is closed
/// (a slowloris client holds a socket, never a thread), a body must arrive within
/// ``Limits/bodyTimeout`` and fit ``Limits/bodyLimit``, and headers must fit 16 KiB.
public final class OAuthHTTPServer: Sendable {
    public struct Limits: Sendable {
        /// How long a connection may go without a whole request (head and body) before it is closed.
        public var idleTimeout: Duration
        /// How long a token request's body may take to arrive.
        public var bodyTimeout: Duration
        /// The largest token request body accepted, in bytes.
        public var bodyLimit: Int
        /// Connections the kernel queues before the server accepts them.
        public var backlog: Int

        public init(
            idleTimeout: Duration = .seconds(10), bodyTimeout: Duration = .seconds(10), bodyLimit: Int = 16 * 1024,
            backlog: Int = 1024
        ) {
            self.idleTimeout = idleTimeout
            self.bodyTimeout = bodyTimeout
            self.bodyLimit = bodyLimit
            self.backlog = backlog
        }
    }

    public enum StartError: Error, CustomStringConvertible {
        case notLoopback(String)
        case couldNotListen(host: String, port: Int, reason: String)

        public var description: String {
            switch self {
            case .notLoopback(let host):
                "serve listens on loopback only; '\(host)' is not 127.0.0.1, ::1 or localhost"
            case .couldNotListen(let host, let port, let reason):
                "could not listen on \(host):\(port): \(reason)"
            }
        }
    }

    private struct State {
        var servers: [String: TokenServer] = [:]
        var nextID = 0
        var task: Task<Void, Never>?
        var group: ServiceGroup?
        var port: Int?
    }

    public let limits: Limits
    let root: TokenServer?
    let onStopRequest: @Sendable () -> Void
    private let state = Mutex(State())

    /// - Parameters:
    ///   - root: the server answered at `/oauth/token`, `/resource` and `/admin/…` (`serve`);
    ///     `nil` to serve only registered ones.
    ///   - onStopRequest: called when a client posts to `/admin/shutdown`.
    public init(serving root: TokenServer? = nil, limits: Limits = Limits(), onStopRequest: @escaping @Sendable () -> Void = {}) {
        self.root = root
        self.limits = limits
        self.onStopRequest = onStopRequest
        root?.keepAccessTokens()
    }

    /// Serves `server` under `/s/ID/`; returns that path.
    public func register(_ server: TokenServer) -> String {
        server.keepAccessTokens()
        return state.withLock(visibleTo: self) { state in
            state.nextID += 1
            let id = String(state.nextID)
            state.servers[id] = server
            return "/s/\(id)"
        }
    }

    /// Stops serving what ``register(_:)`` returned `path` for.
    public func unregister(_ path: String) {
        let id = String(path.dropFirst("/s/".count))
        _ = state.withLock(visibleTo: self) { $0.servers.removeValue(forKey: id) }
    }

    func registered(_ id: String?) -> TokenServer? {
        guard let id else { return nil }
        return state.withLock(visibleTo: self) { $0.servers[id] }
    }

    /// The port it listens on, once started.
    public var port: Int? { state.withLock(visibleTo: self) { $0.port } }

    /// Starts listening on `host`:`port` (0 picks a free port); returns the port.
    public func start(host: String = "127.0.0.1", port: Int = 0) async throws -> Int {
        guard LoopbackHTTP.isLoopback(host) else { throw StartError.notLoopback(host) }
        // The clock's timer descriptor is made on its first use: made now, not when the
        // connections have taken every descriptor (libdispatch traps when it cannot make one).
        try? await Task.sleep(for: .milliseconds(1))
        let (ports, portSink) = AsyncStream<Int>.makeStream()
        let failure = Mutex<String?>(nil)
        // Short of descriptors, connections wait in the kernel's queue rather than take the last
        // ones the process needs for itself, and one that waits for a request makes room.
        let pressure = ConnectionPressure(limit: Self.connectionLimit())
        let application = Application(
            router: makeRouter(),
            server: WatchedHTTP1Channel.builder(
                .init(
                    additionalChannelHandlers: [HangUpWatch()],
                    idleTimeout: .nanoseconds(limits.idleTimeout.nanosecondsClamped),
                    httpDecoderConfiguration: .init(
                        maxHeaderFieldSize: 8 * 1024, maxHeaderListSize: 16 * 1024, maxHeaderFieldCount: 100)),
                pressure: pressure),
            configuration: .init(
                address: .hostname(host == "localhost" ? "127.0.0.1" : host, port: port), serverName: "session-bench",
                backlog: limits.backlog, availableConnectionsDelegate: pressure.delegate),
            onServerRunning: { channel in
                portSink.yield(channel.localAddress?.port ?? 0)
                portSink.finish()
            },
            logger: Self.silent)
        // Run under a service group so that stopping is a graceful shutdown: the server stops
        // accepting, finishes the requests it has and closes its connections. (Cancelling it
        // instead drops connections accepted but not yet handled, which SwiftNIO traps on.)
        let group = ServiceGroup(services: [application], logger: Self.silent)
        let task = Task {
            do { try await group.run() } catch {
                failure.withLock(visibleTo: self) { $0 = String(describing: error) }
            }
            portSink.finish()
        }
        state.withLock(visibleTo: self) {
            $0.task = task
            $0.group = group
        }
        for await bound in ports where bound > 0 {
            state.withLock(visibleTo: self) { $0.port = bound }
            return bound
        }
        await group.triggerGracefulShutdown()
        let reason = failure.withLock(visibleTo: self) { $0 } ?? "the server stopped as it started"
        throw StartError.couldNotListen(host: host, port: port, reason: reason)
    }

    static let silent = Logger(label: "session-bench.serve", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Descriptors kept for the process itself (event loops, timers, files it writes, the
    /// measuring processes' pipes) whatever its clients do.
    static let reservedDescriptors = 64

    /// How many connections may be open at once: the open-file limit (raised to its hard limit
    /// first) less the descriptors the process keeps for itself.
    static func connectionLimit() -> Int {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        let usable = Int(min(limit.rlim_cur, 1 << 20))
        return max(8, usable - reservedDescriptors)
    }

    /// Stops listening and closes every connection once its request is answered; returns when
    /// the server has stopped, or after `within`, whichever comes first. A request still held
    /// then (a latency of minutes, a timeout fault of an hour) is left to finish or to end with
    /// the process: it never holds the stop.
    public func stop(within: Duration = .seconds(5)) async {
        let (task, group) = state.withLock(visibleTo: self) { state in
            defer {
                state.task = nil
                state.group = nil
            }
            return (state.task, state.group)
        }
        guard let task, let group else { return }
        await group.triggerGracefulShutdown()
        await firstToFinish([{ await task.value }, { try? await Task.sleep(for: within) }])
    }

    // MARK: Routes

    private func makeRouter() -> Router<ServeRequestContext> {
        let router = Router(context: ServeRequestContext.self)
        router.add(middleware: LoopbackGuard { [weak self] in self?.port })
        let routes = TokenRoutes(limits: limits)
        // A server registered by the transport, under /s/ID/.
        @Sendable func scoped(_ context: ServeRequestContext) -> TokenServer? { registered(context.parameters.get("id")) }
        router.post("s/:id/oauth/token") { request, context in
            guard let server = scoped(context) else { return TokenRoutes.unknownServer() }
            return await routes.token(request, server: server, watch: await context.hangUpWatch)
        }
        router.get("s/:id/resource") { request, context in
            guard let server = scoped(context) else { return TokenRoutes.unknownServer() }
            return routes.resource(request, server: server)
        }
        guard let root else { return router }
        router.post("oauth/token") { request, context in
            await routes.token(request, server: root, watch: await context.hangUpWatch)
        }
        // Some clients name the token endpoint /token; both reach the same one.
        router.post("token") { request, context in await routes.token(request, server: root, watch: await context.hangUpWatch) }
        // The protected resource, also at /mcp, where an MCP client sends its requests.
        for path in ["resource", "mcp"] {
            router.get(RouterPath(stringLiteral: path)) { request, _ in routes.resource(request, server: root) }
            router.post(RouterPath(stringLiteral: path)) { request, _ in routes.resource(request, server: root) }
        }
        router.get(".well-known/oauth-authorization-server") { request, _ in routes.authorizationServerMetadata(request) }
        router.get(".well-known/oauth-protected-resource") { request, _ in routes.protectedResourceMetadata(request) }
        router.get(".well-known/oauth-protected-resource/**") { request, _ in routes.protectedResourceMetadata(request) }
        router.get("admin/verdicts") { request, _ in routes.verdicts(request, server: root) }
        let stop = onStopRequest
        router.post("admin/shutdown") { request, _ in
            // A header a web page cannot send to another origin without a preflight, which
            // serve never answers: a page open in the tester's browser cannot stop it.
            guard request.headers[TokenRoutes.admin] != nil else {
                return TokenRoutes.error(
                    .forbidden, "access_denied", "send the header \(OAuthWire.adminHeader): stop to stop serve")
            }
            let response = routes.verdicts(request, server: root)
            // After the answer has gone out.
            Task {
                try? await Task.sleep(for: .milliseconds(50))
                stop()
            }
            return response
        }
        return router
    }
}
#endif
