#if HTTP
import SessionBench
import TokenServer

extension LoopbackHTTP {
    /// Hummingbird for the server, AsyncHTTPClient for the stores' endpoints.
    public static let live = LoopbackHTTP(transport: HTTPTransport.shared) { server, host, port, idleTimeout, onStop in
        let http = OAuthHTTPServer(serving: server, limits: .init(idleTimeout: idleTimeout), onStopRequest: onStop)
        let bound = try await http.start(host: host, port: port)
        return Running(port: bound) { await http.stop() }
    }
}
#endif
