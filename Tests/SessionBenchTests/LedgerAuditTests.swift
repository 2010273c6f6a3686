import SessionContract
import SessionOracle
import Testing
import TokenServer

@testable import SessionBench

/// The ledger's single-flight and reuse checks say each thing once, and true: a token presented
/// again counts against single flight only after it bought the client a grant, and a storm's
/// refresh calls are "against a healthy server" only when the server did not refuse the session.
@Suite("The ledger audit")
struct LedgerAuditTests {
    static func server() -> TokenServer { TokenServer(configuration: .init(tokenLifetime: .seconds(300))) }

    @Test("an answer lost on the way, its one retry refused as a reuse, then a retry of the refused token: no I1, no I7")
    func refusedPresentationsBoughtNothing() async throws {
        let server = Self.server()
        let grant = try await server.signIn(Credentials(subject: Subject("lost")))
        server.scriptRefreshes([.lostResponse])
        for _ in 0..<3 { _ = await server.refreshResult(grant.refreshToken) }
        #expect(server.ledger.entries.filter { $0.call == .refresh }.map(\.outcome) == [.responseLost, .reuseDetected, .familyRevoked])
        let oracle = Oracle(scenario: "flaky-server", seed: 1)
        oracle.auditLedger(server.ledger.entries) { _ in true }
        #expect(oracle.violations.isEmpty, "\(oracle.violations.map(\.summary))")
        let verdicts = LedgerVerdicts(ledger: server.ledger, tokenLifetime: .seconds(300))
        #expect(verdicts.repeatedRedemptions == 0)
        #expect(verdicts.refreshesAfterInvalidGrant == 1, "the last retry is the client not stopping after invalid_grant")
    }

    @Test("a token presented again after it bought a grant the client had is I1 and I7, with the grant's call first in the trace")
    func boughtThenPresentedAgain() async throws {
        let server = Self.server()
        let grant = try await server.signIn(Credentials(subject: Subject("twice")))
        _ = try await server.refresh(grant.refreshToken)
        _ = await server.refreshResult(grant.refreshToken)
        _ = await server.refreshResult(grant.refreshToken)
        let oracle = Oracle(scenario: "expiry-storm", seed: 1)
        oracle.auditLedger(server.ledger.entries) { _ in true }
        let single = try #require(oracle.violations.first { $0.invariant == .singleFlight })
        #expect(single.summary.contains("after the client had the grant it bought"))
        #expect(single.trace.first?.contains(": issued →") == true, "\(single.trace)")
        #expect(single.occurrences == 2)
        #expect(oracle.violations.contains { $0.invariant == .noReuse })
    }

    @Test("a storm against a session the server had refused is not 'against a healthy server'")
    func stormOnRefusedSession() async throws {
        let server = Self.server()
        let subject = Subject("revoked")
        let grant = try await server.signIn(Credentials(subject: subject))
        server.revokeSessions(of: subject)
        for _ in 0..<3 { _ = await server.refreshResult(grant.refreshToken) }
        let refused = server.ledger.entries.filter { $0.call == .refresh }
        let oracle = Oracle(scenario: "401-storm", seed: 1)
        oracle.checkOneRefresh(refused, round: 4, what: "401 storm", released: nil)
        #expect(oracle.violations.isEmpty, "\(oracle.violations.map(\.summary))")

        // Against a healthy server, the same three calls are I1.
        let healthy = Self.server()
        let fresh = try await healthy.signIn(Credentials(subject: subject))
        for _ in 0..<3 { _ = await healthy.refreshResult(fresh.refreshToken) }
        let storm = Oracle(scenario: "401-storm", seed: 1)
        storm.checkOneRefresh(healthy.ledger.entries.filter { $0.call == .refresh }, round: 4, what: "401 storm", released: nil)
        #expect(storm.violations.first?.summary.contains("3 refresh calls for one 401 storm against a healthy server") == true)
    }
}
