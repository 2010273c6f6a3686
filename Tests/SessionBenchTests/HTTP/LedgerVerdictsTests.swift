import SessionBench
import SessionContract
import SessionOracle
import Testing
import TokenServer

/// The verdicts `serve` gives a client from the ledger alone: each catches its bug, and the
/// tail of a burst is not mistaken for a client that will not stop.
@Suite struct LedgerVerdictsTests {
    static let lifetime = Duration.seconds(60)

    func server() -> TokenServer {
        TokenServer(configuration: .init(tokenLifetime: Self.lifetime, latency: .fixed(.milliseconds(30))))
    }

    func check(_ verdicts: LedgerVerdicts, _ name: String) -> LedgerVerdicts.Check? {
        verdicts.checks.first { $0.name == name }
    }

    @Test("a burst of refreshes with one token: single flight and reuse fail, stopping after invalid_grant does not")
    func burst() async throws {
        let server = server()
        let grant = try await server.signIn(Credentials(subject: Subject("burst")))
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<10 { group.addTask { _ = await server.refreshResult(grant.refreshToken) } }
        }
        let verdicts = LedgerVerdicts(ledger: server.ledger, tokenLifetime: Self.lifetime)
        #expect(verdicts.refreshesPerExpiry == 10)
        #expect(verdicts.overlappingRefreshes == 9)
        #expect(verdicts.repeatedRedemptions == 9)
        #expect(check(verdicts, "single-flight")?.passed == false)
        #expect(check(verdicts, "no-reuse")?.count == 9, "every presentation of the used token, not only the first")
        #expect(check(verdicts, "stops-after-invalid-grant")?.passed == true, "sent before any answer came back")
        #expect(!verdicts.passed)
    }

    @Test("a client that keeps refreshing a revoked session, one call after another, is counted")
    func retryLoop() async throws {
        let server = server()
        let grant = try await server.signIn(Credentials(subject: Subject("loop")))
        let second = try await server.refresh(grant.refreshToken)
        for _ in 0..<3 { _ = await server.refreshResult(grant.refreshToken) }
        _ = await server.refreshResult(second.refreshToken)
        let verdicts = LedgerVerdicts(ledger: server.ledger, tokenLifetime: Self.lifetime)
        // The first reuse is the client learning; the three calls after it are the loop.
        #expect(verdicts.refreshesAfterInvalidGrant == 3)
        #expect(verdicts.overlappingRefreshes == 0)
        #expect(check(verdicts, "stops-after-invalid-grant")?.passed == false)
    }

    @Test("concurrent grants for one client fail one-client-grant-at-a-time; one after another, or users' sign-ins, pass")
    func clientGrantStorm() async throws {
        let storm = server()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<10 { group.addTask { _ = await storm.signInClient(Subject("client")) } }
        }
        let stormed = LedgerVerdicts(ledger: storm.ledger, tokenLifetime: Self.lifetime)
        #expect(stormed.clients == 1)
        #expect(stormed.overlappingClientGrants == 9)
        #expect(check(stormed, "one-client-grant-at-a-time")?.passed == false)

        let calm = server()
        for _ in 0..<3 { _ = await calm.signInClient(Subject("client")) }
        // One user on several devices at once is not a storm.
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<5 { group.addTask { _ = await calm.signInResult(Credentials(subject: Subject("alice"))) } }
        }
        let verdicts = LedgerVerdicts(ledger: calm.ledger, tokenLifetime: Self.lifetime)
        #expect(verdicts.clients == 1)
        #expect(verdicts.overlappingClientGrants == 0)
        #expect(verdicts.passed)
        #expect(check(verdicts, "single-flight")?.detail == "no refresh yet", "no silent 0.00 per expiry")
    }

    @Test("refreshing once per caller, one after another, fails single-flight though nothing overlaps")
    func serialRefreshes() async throws {
        let server = server()
        var grant = try await server.signIn(Credentials(subject: Subject("serial")))
        // Three callers under a lock that never checks again: each refreshes the token the last
        // one just got.
        for _ in 0..<3 { grant = try await server.refresh(grant.refreshToken) }
        let verdicts = LedgerVerdicts(ledger: server.ledger, tokenLifetime: Self.lifetime)
        #expect(verdicts.overlappingRefreshes == 0)
        #expect(verdicts.repeatedRedemptions == 0)
        #expect(verdicts.backToBackRefreshes == 3)
        #expect(check(verdicts, "single-flight")?.passed == false)
    }

    @Test("a token refused, then sent again long after, is a 401 loop; refusals of requests in flight are not")
    func rejectionLoop() async throws {
        let time = ManualTime()
        let server = TokenServer(configuration: .init(tokenLifetime: Self.lifetime), clock: .manual(time))
        server.keepAccessTokens()
        let grant = try await server.signIn(Credentials(subject: Subject("loop")))
        time.advance(by: .seconds(61))
        // Requests that were in flight when it expired.
        for _ in 0..<5 { #expect(server.checkAccess(grant.accessToken.value) == .expired) }
        #expect(LedgerVerdicts(ledger: server.ledger, tokenLifetime: Self.lifetime).passed)
        // The client never replaced it.
        for _ in 0..<3 {
            time.advance(by: .seconds(3))
            _ = server.checkAccess(grant.accessToken.value)
        }
        let verdicts = LedgerVerdicts(ledger: server.ledger, tokenLifetime: Self.lifetime)
        #expect(verdicts.repeatedRejections == 3)
        #expect(check(verdicts, "no-401-loop")?.passed == false)
    }
}
