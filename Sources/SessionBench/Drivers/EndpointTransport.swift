import SessionContract
import TokenServer

/// How a store reaches the token server a scenario runs. In process (no transport), the store
/// calls the server's methods; over a transport it calls an endpoint that carries each call to
/// the same server, over real sockets, say. The harness keeps its own hold on the server (the
/// ledger, the gate, scripted faults), so every check reads the same ledger either way.
public protocol EndpointTransport: Sendable {
    /// A short name for reports: `http`.
    var name: String { get }

    /// An endpoint through which a store reaches `server`. The transport may hold `server`
    /// until ``TransportEndpoint/close()``.
    func endpoint(for server: TokenServer) -> any TransportEndpoint
}

/// A transport that other processes can use: `replicas` serves the driver's token server at a
/// URL, and each replica process reaches it there through an endpoint of its own — one server,
/// one ledger, for every replica.
public protocol NetworkTransport: EndpointTransport {
    /// Serves `server` until the returned value's `stop` is called.
    func serve(_ server: TokenServer) async throws -> ServedTokenServer

    /// An endpoint, in any process of this machine, reaching the server served at `url`.
    func endpoint(url: String) -> any TokenEndpoint
}

/// A token server being served for other processes.
public struct ServedTokenServer: Sendable {
    /// Where: `http://127.0.0.1:PORT/s/ID`. Names no secret.
    public let url: String
    public let stop: @Sendable () -> Void

    public init(url: String, stop: @escaping @Sendable () -> Void) {
        self.url = url
        self.stop = stop
    }
}

/// A store's way to one token server over a transport.
public protocol TransportEndpoint: StepUpEndpoint {
    /// Each refresh call's round trip less the server's own time, as the server reported it:
    /// what the transport adds (encoding, sockets, parsing), in nanoseconds, in call order.
    func refreshOverheads() -> [Int64]

    /// Lets the server go; later calls fail as `transient`.
    func close()
}

/// A scenario's server as its store sees it: the server itself in process, or an endpoint that
/// reaches it over the runner's transport (`ScenarioRunner.transport`).
struct ServerLink {
    let server: TokenServer
    let remote: (any TransportEndpoint)?
    let transportName: String?

    init(_ server: TokenServer, transport: (any EndpointTransport)?) {
        self.server = server
        transportName = transport?.name
        remote = transport?.endpoint(for: server)
    }

    /// What the store is configured with.
    var endpoint: any StepUpEndpoint { remote ?? server }

    /// Writes what the transport added into `outcome`.
    func measure(into outcome: inout DriverOutcome) {
        guard let remote, let transportName else { return }
        outcome.transportName = transportName
        outcome.transportOverheads += remote.refreshOverheads()
    }

    /// Lets the transport go.
    func close() { remote?.close() }
}

/// What a build with HTTP brings to the command line: the transport `--transport http` runs
/// stores over, and the loopback server `serve` runs. The `session-bench` executable passes
/// the SessionBenchHTTP module's; a build without the HTTP trait has none.
public struct LoopbackHTTP: Sendable {
    /// A token server being served.
    public struct Running: Sendable {
        public let port: Int
        /// Stops listening and closes every connection.
        public let stop: @Sendable () async -> Void

        public init(port: Int, stop: @escaping @Sendable () async -> Void) {
            self.port = port
            self.stop = stop
        }
    }

    public let transport: any EndpointTransport

    /// Whether `host` names the loopback interface, the only one `serve` listens on.
    public static func isLoopback(_ host: String) -> Bool { ["127.0.0.1", "::1", "localhost"].contains(host) }

    /// Serves `server` on loopback `host`:`port` (0 picks a free port), closing connections
    /// that send no whole request within `idleTimeout`; `onStopRequest` is called when a client
    /// asks the server to stop.
    public let serve:
        @Sendable (
            _ server: TokenServer, _ host: String, _ port: Int, _ idleTimeout: Duration,
            _ onStopRequest: @escaping @Sendable () -> Void
        ) async throws -> Running

    public init(
        transport: any EndpointTransport,
        serve:
            @escaping @Sendable (TokenServer, String, Int, Duration, @escaping @Sendable () -> Void) async throws ->
            Running
    ) {
        self.transport = transport
        self.serve = serve
    }
}
