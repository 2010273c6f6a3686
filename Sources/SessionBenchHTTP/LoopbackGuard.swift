#if HTTP
internal import HTTPTypes
internal import Hummingbird

/// Serves only requests addressed to this server on loopback, and refuses requests that change
/// something when a web page of another origin sent them.
///
/// A page served by any site can make the browser send requests to 127.0.0.1 (a form post), or
/// make its own name resolve there (DNS rebinding): the Host then names the attacker's site, and
/// the Origin the page's. Only `127.0.0.1`, `localhost` and `[::1]` with the server's port are
/// served (421 otherwise, 400 without a Host), so no other name is ever reflected into an
/// answer; a POST with an Origin that is not one of those is refused with 403. Clients that are
/// not browsers send no Origin and are served.
struct LoopbackGuard: RouterMiddleware {
    typealias Context = ServeRequestContext

    /// The port the server listens on, once it does.
    let port: @Sendable () -> Int?

    /// The Host values this server answers to.
    func hosts(port: Int) -> Set<String> {
        var hosts: Set<String> = ["127.0.0.1:\(port)", "localhost:\(port)", "[::1]:\(port)"]
        if port == 80 { hosts.formUnion(["127.0.0.1", "localhost", "[::1]"]) }
        return hosts
    }

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let port = port() else { return try await next(request, context) }
        let allowed = hosts(port: port)
        guard let host = request.head.authority?.lowercased() else {
            return TokenRoutes.error(.badRequest, "invalid_request", "the request has no Host")
        }
        guard allowed.contains(host) else {
            return TokenRoutes.error(
                .misdirectedRequest, "invalid_request",
                "this server answers to 127.0.0.1, localhost and [::1] on port \(port) only")
        }
        if request.method != .get, request.method != .head, let origin = request.headers[.origin] {
            let own = allowed.flatMap { ["http://\($0)", "https://\($0)"] }
            guard own.contains(origin.lowercased()) else {
                return TokenRoutes.error(
                    .forbidden, "access_denied", "a request from another origin may not change anything here")
            }
        }
        return try await next(request, context)
    }
}
#endif
