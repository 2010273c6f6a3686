#if HTTP
import Foundation
import SessionBench
import SessionBenchHTTP
import SessionContract
import SessionOracle
import Testing
import TokenServer

/// The token server over HTTP: what it answers (RFC 6749, RFC 6750), and that no client can
/// hang or crash it: garbage, requests that never finish, a thousand connections at once.
// The limit bounds a hang: part of it may be spent waiting for the in-process suites' turns.
@Suite(.tags(.slow), .skippedInQuickRun, .serialized, .inProcessTurn, .timeLimit(.minutes(30))) struct ServeTests {
    /// Serves a fresh token server on a free port for the length of `body`.
    func serving(
        lifetime: Duration = .seconds(60), time: ManualTime? = nil,
        limits: OAuthHTTPServer.Limits = .init(), _ body: (TokenServer, Int) async throws -> Void
    ) async throws {
        let server = TokenServer(
            configuration: .init(tokenLifetime: lifetime), clock: time.map { .manual($0) } ?? .system)
        let http = OAuthHTTPServer(serving: server, limits: limits)
        let port = try await http.start(host: "127.0.0.1", port: 0)
        #expect(port > 0)
        do {
            try await body(server, port)
        } catch {
            await http.stop()
            throw error
        }
        await http.stop()
    }

    func signIn(_ port: Int, user: String = "user-a") async throws -> (access: String, refresh: String) {
        let answer = try #require(await Exchange.token(port: port, "grant_type=password&username=\(user)&password=pw"))
        #expect(answer.status == 200, "\(answer.head)")
        let json = try #require(answer.json)
        return (try #require(json["access_token"] as? String), try #require(json["refresh_token"] as? String))
    }

    @Test("a refresh rotates the refresh token; a reused one is invalid_grant and revokes the session")
    func rotationAndReuse() async throws {
        try await serving { server, port in
            let first = try await signIn(port)
            #expect(await Exchange.resource(port: port, token: first.access)?.status == 200)

            let refreshed = try #require(await Exchange.token(port: port, "grant_type=refresh_token&refresh_token=\(first.refresh)"))
            #expect(refreshed.status == 200)
            let json = try #require(refreshed.json)
            #expect(json["token_type"] as? String == "Bearer")
            #expect((json["expires_in"] as? Int).map { (58...60).contains($0) } == true)
            #expect(json["session_bench"] == nil, "the harness's fields go only to the harness")
            #expect(refreshed.header("Cache-Control") == "no-store")
            #expect(refreshed.header("Server-Timing")?.hasPrefix("app;dur=") == true)
            #expect(refreshed.header("Connection") != "close", "a keep-alive client's next request is answered on the same connection")
            let second = try #require(json["refresh_token"] as? String)
            let secondAccess = try #require(json["access_token"] as? String)
            #expect(second != first.refresh)

            let reused = try #require(await Exchange.token(port: port, "grant_type=refresh_token&refresh_token=\(first.refresh)"))
            #expect(reused.status == 400)
            #expect(reused.json?["error"] as? String == "invalid_grant")
            // The family is revoked: its newest refresh token and access token are dead too.
            let after = try #require(await Exchange.token(port: port, "grant_type=refresh_token&refresh_token=\(second)"))
            #expect(after.json?["error"] as? String == "invalid_grant")
            let rejected = try #require(await Exchange.resource(port: port, token: secondAccess))
            #expect(rejected.status == 401)
            #expect(rejected.header("WWW-Authenticate")?.contains(#"error="invalid_token""#) == true)

            let verdicts = LedgerVerdicts(ledger: server.ledger, tokenLifetime: .seconds(60))
            #expect(!verdicts.passed)
            #expect(verdicts.reuseDetected == 1)
            #expect(verdicts.repeatedRedemptions == 1)
            #expect(verdicts.refreshesAfterInvalidGrant == 1, "the refresh after the reuse was refused")
            let admin = try #require(await Exchange.send(port: port, "GET", "/admin/verdicts?format=json"))
            #expect(admin.status == 200)
            #expect(admin.json?["verdict"] as? String == "fail")
        }
    }

    @Test("an expired access token gets 401 invalid_token; a stale-401 refresh is counted")
    func expiryAndStaleRefresh() async throws {
        let time = ManualTime()
        try await serving(lifetime: .seconds(60), time: time) { server, port in
            let first = try await signIn(port)
            time.advance(by: .seconds(61))
            let expired = try #require(await Exchange.resource(port: port, token: first.access))
            #expect(expired.status == 401)
            #expect(expired.header("WWW-Authenticate")?.contains("expired") == true)
            // The client refreshes once: right.
            let refreshed = try #require(await Exchange.token(port: port, "grant_type=refresh_token&refresh_token=\(first.refresh)"))
            let json = try #require(refreshed.json)
            let second = (try #require(json["access_token"] as? String), try #require(json["refresh_token"] as? String))
            #expect(await Exchange.resource(port: port, token: second.0)?.status == 200)
            // A late 401 for the old token, and the client refreshes its new, fresh one: wasted.
            #expect(await Exchange.resource(port: port, token: first.access)?.status == 401)
            #expect(await Exchange.token(port: port, "grant_type=refresh_token&refresh_token=\(second.1)")?.status == 200)
            let verdicts = LedgerVerdicts(ledger: server.ledger, tokenLifetime: .seconds(60))
            #expect(verdicts.staleRejectionRefreshes == 1)
            #expect(verdicts.repeatedRedemptions == 0)
            #expect(verdicts.refreshesPerExpiry == 1)
            #expect(verdicts.checks.first { $0.name == "no-stale-401-refresh" }?.passed == false)
            #expect(verdicts.checks.first { $0.name == "single-flight" }?.passed == true)
        }
    }

    @Test("malformed requests get RFC 6749 and RFC 6750 errors, and the server goes on")
    func badRequests() async throws {
        try await serving { server, port in
            let form = ["Content-Type": "application/x-www-form-urlencoded"]
            let cases: [(Exchange?, Int, String?)] = [
                (await Exchange.send(port: port, "POST", "/oauth/token", headers: ["Content-Type": "application/json"], body: "{}"), 400, "invalid_request"),
                (await Exchange.send(port: port, "POST", "/oauth/token", headers: form, body: ""), 400, "invalid_request"),
                (await Exchange.token(port: port, "grant_type=implicit"), 400, "unsupported_grant_type"),
                (await Exchange.token(port: port, "grant_type=refresh_token&grant_type=password"), 400, "invalid_request"),
                (await Exchange.token(port: port, "grant_type=refresh_token&refresh_token=%zz"), 400, "invalid_request"),
                (await Exchange.token(port: port, "grant_type=refresh_token"), 400, "invalid_request"),
                (await Exchange.token(port: port, "grant_type=refresh_token&refresh_token=never-issued"), 400, "invalid_grant"),
                (await Exchange.token(port: port, "grant_type=client_credentials"), 401, "invalid_client"),
                // The password grant needs both (RFC 6749 §4.3.2); a parameter sent empty is left out (§3.1).
                (await Exchange.token(port: port, "grant_type=password&username=alice"), 400, "invalid_request"),
                (await Exchange.token(port: port, "grant_type=password&username=alice&password="), 400, "invalid_request"),
                (await Exchange.token(port: port, "grant_type=password&password=pw"), 400, "invalid_request"),
                (await Exchange.token(port: port, String(repeating: "a", count: 20_000)), 413, "invalid_request"),
            ]
            for (answer, status, error) in cases {
                let answer = try #require(answer)
                #expect(answer.status == status, "\(answer.head)")
                #expect(answer.json?["error"] as? String == error, "\(answer.body)")
            }
            #expect(LedgerVerdicts(ledger: server.ledger, tokenLifetime: .seconds(60)).signIns == 0, "a bad request signed in")
            let anonymous = try #require(await Exchange.send(port: port, "GET", "/resource"))
            #expect(anonymous.status == 401)
            #expect(anonymous.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
            let notBearer = try #require(await Exchange.send(port: port, "GET", "/resource", headers: ["Authorization": "Basic eA=="]))
            #expect(notBearer.status == 400)
            #expect(await Exchange.resource(port: port, token: "forged")?.status == 401)
            // A machine client by HTTP Basic, as the MCP SDK authenticates.
            let machine = try #require(
                await Exchange.token(port: port, "grant_type=client_credentials", headers: ["Authorization": "Basic YmVuY2g6cw=="]))
            #expect(machine.status == 200)
            _ = try await signIn(port)
        }
    }

    @Test("garbage bytes get a 400 or a closed connection, and the server goes on")
    func garbage() async throws {
        try await serving { _, port in
            var random = SeededRandom(seed: 7)
            for round in 0..<40 {
                let socket = try #require(RawSocket(port: port))
                let length = 1 + Int(random.next() % 4096)
                var bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                // Some start like HTTP and go wrong later.
                if round % 2 == 0 { bytes = Array("POST /oauth/token HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n".utf8) + bytes }
                socket.transmit(bytes)
                let answer = await socket.receive(timeout: 15)
                #expect(answer.closed || answer.text.hasPrefix("HTTP/1.1 4"), "round \(round): \(answer.text.prefix(80))")
            }
            _ = try await signIn(port)
        }
    }

    @Test("slowloris: connections that never finish a request are closed, and others are served meanwhile")
    func slowloris() async throws {
        raiseOpenFileLimit()
        try await serving(limits: .init(idleTimeout: .milliseconds(500))) { _, port in
            let slow = (0..<100).compactMap { _ in RawSocket(port: port) }
            #expect(slow.count == 100)
            for socket in slow { socket.transmit("GET /resource HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ") }
            // One byte more every 100 ms: never a whole head.
            for _ in 0..<5 {
                try await Task.sleep(for: .milliseconds(100))
                for socket in slow { socket.transmit("a") }
            }
            _ = try await signIn(port)
            var closed = 0
            for socket in slow {
                if await socket.receive(timeout: 10).closed { closed += 1 }
            }
            #expect(closed == 100, "the server closed \(closed) of 100 unfinished connections")
            // A head that arrives whole but a body that stalls: 408, then closed.
            let stalled = try #require(RawSocket(port: port))
            stalled.transmit(
                "POST /oauth/token HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                    + "Content-Length: 100\r\n\r\ngrant_type=")
            let answer = await stalled.receive(timeout: 20)
            #expect(answer.text.hasPrefix("HTTP/1.1 408") || answer.closed, "\(answer.text.prefix(80))")
            _ = try await signIn(port)
        }
    }

    @Test("1,000 connections at once each get their answer")
    func thousandConnections() async throws {
        raiseOpenFileLimit()
        try #require(openFileLimit() >= 2_200, "this test needs 2,200 open files; the limit is \(openFileLimit())")
        try await serving { _, port in
            let token = try await signIn(port).access
            var sockets: [RawSocket] = []
            for _ in 0..<1_000 { sockets.append(try #require(RawSocket(port: port))) }
            // Every connection is open before any request is sent.
            let request = "GET /resource HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAuthorization: Bearer \(token)\r\n\r\n"
            for socket in sockets { #expect(socket.transmit(request)) }
            var answered = 0
            for socket in sockets {
                if await socket.receive(until: "{\"ok\":true}", timeout: 30).text.hasPrefix("HTTP/1.1 200") { answered += 1 }
            }
            #expect(answered == 1_000)
            _ = try await signIn(port)
        }
    }

    @Test("only loopback: any other address is refused before anything listens")
    func loopbackOnly() async throws {
        let http = OAuthHTTPServer(serving: TokenServer())
        await #expect(throws: OAuthHTTPServer.StartError.self) { _ = try await http.start(host: "0.0.0.0", port: 0) }
    }
}
#endif
