import SessionBench
import SessionContract
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

    @Test("concurrent grants for one client fail one-sign-in-at-a-time; one after another, or for others, pass")
    func signInStorm() async throws {
        let storm = server()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<10 { group.addTask { _ = await storm.signInResult(Credentials(subject: Subject("client"))) } }
        }
        let stormed = LedgerVerdicts(ledger: storm.ledger, tokenLifetime: Self.lifetime)
        #expect(stormed.principals == 1)
        #expect(stormed.overlappingSignIns == 9)
        #expect(check(stormed, "one-sign-in-at-a-time")?.passed == false)

        let calm = server()
        for _ in 0..<3 { _ = await calm.signInResult(Credentials(subject: Subject("client"))) }
        await withTaskGroup(of: Void.self) { group in
            for user in 0..<5 { group.addTask { _ = await calm.signInResult(Credentials(subject: Subject("user-\(user)"))) } }
        }
        let verdicts = LedgerVerdicts(ledger: calm.ledger, tokenLifetime: Self.lifetime)
        #expect(verdicts.principals == 6)
        #expect(verdicts.overlappingSignIns == 0)
        #expect(verdicts.passed)
        #expect(check(verdicts, "single-flight")?.detail == "no refresh yet", "no silent 0.00 per expiry")
    }
}
