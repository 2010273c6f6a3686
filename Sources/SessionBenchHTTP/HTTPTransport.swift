#if HTTP
internal import AsyncHTTPClient
internal import NIOCore
import SessionBench
import SessionContract
import SessionSync
import Synchronization
import TokenServer

/// `--transport http`: every scenario's token server is served over HTTP on loopback, and its
/// store reaches it through ``HTTPTokenEndpoint``. One server and one client per process, made
/// on first use; each scenario's server is registered under a path of its own.
public final class HTTPTransport: NetworkTransport {
    public static let shared = HTTPTransport()

    public let name = "http"
    let server = OAuthHTTPServer()
    /// A pool wide enough that the client never queues a store's concurrent calls: a store that
    /// refreshes once per caller must show it at the server.
    let client = HTTPClient(
        eventLoopGroup: HTTPClient.defaultEventLoopGroup,
        configuration: .init(
            timeout: .init(connect: .seconds(5)),
            connectionPool: .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: 1024)))
    /// Longer than any scenario's hang timeout: the harness's watchdog decides what hung.
    static let requestTimeout: TimeAmount = .seconds(600)

    private let listening = Mutex<Task<Int, any Error>?>(nil)

    init() {}

    /// The port the server listens on, starting it on first use.
    func port() async throws -> Int {
        let task = listening.withLock(visibleTo: self) { task in
            if let task { return task }
            let server = server
            let started = Task { try await server.start(host: "127.0.0.1", port: 0) }
            task = started
            return started
        }
        return try await task.value
    }

    public func endpoint(for server: TokenServer) -> any TransportEndpoint {
        HTTPTokenEndpoint(transport: self, path: self.server.register(server))
    }

    /// `replicas`: the server at `http://127.0.0.1:PORT/s/ID`, for the replica processes.
    public func serve(_ server: TokenServer) async throws -> ServedTokenServer {
        let path = self.server.register(server)
        let port: Int
        do { port = try await self.port() } catch {
            self.server.unregister(path)
            throw error
        }
        return ServedTokenServer(url: "http://127.0.0.1:\(port)\(path)") { [httpServer = self.server] in
            httpServer.unregister(path)
        }
    }

    /// An endpoint reaching a server another process of this machine serves at `url` (what
    /// ``serve(_:)`` returned there).
    public func endpoint(url: String) -> any TokenEndpoint {
        HTTPTokenEndpoint(transport: self, url: url)
    }
}
#endif
