import SessionContract
import SessionOracle
import Testing
import TokenServer

/// The steady scenarios' judge on histories written by hand: a real server signs the user in
/// (and refreshes where a test says), the run's figures are chosen.
@Suite("The steady judge, on histories written by hand")
struct SteadyJudgeTests {
    /// A user signed in at a server on a manual clock; the history of a reads-only run that has
    /// just ended, with nothing else recorded.
    struct Run {
        let time = ManualTime()
        let server: TokenServer
        let grant: TokenGrant
        var history: SteadyHistory

        init() async throws {
            server = TokenServer(configuration: .init(tokenLifetime: .seconds(300)), clock: .manual(time))
            let started = TokenServer.realNanoseconds()
            grant = try await server.signIn(Credentials(subject: Subject("steady-judge-user")))
            let signedIn = SessionEvent(
                account: 0, kind: .signIn(slot: 0, family: server.ledger.entries.first?.family), startedNanos: started,
                returnedNanos: TokenServer.realNanoseconds())
            history = SteadyHistory(signedIn: signedIn, skew: .seconds(1), readsOnly: true, endedAt: time.now)
            ended()
        }

        /// The run ends now: the ledger as it stands.
        mutating func ended() {
            history.endedAt = time.now
            history.entries = server.ledger.entries
            history.issued = server.issuedTokens
        }

        /// A synchronous phase from now until the end of `during`, in which `misses` of `calls` answered nil.
        mutating func syncPhase(misses: UInt64, of calls: UInt64, during: () async throws -> Void = {}) async rethrows {
            let from = (TokenServer.realNanoseconds(), time.now)
            try await during()
            history.misses = .init(
                count: misses, calls: calls, from: from, to: (TokenServer.realNanoseconds() + 1, time.now),
                entries: server.ledger.entries, issued: server.issuedTokens)
        }

        var invariants: [Invariant] { SteadyJudge.judge(history).map(\.invariant) }
    }

    @Test("a clean run: nothing")
    func clean() async throws {
        var run = try await Run()
        try await run.syncPhase(misses: 0, of: 1_000)
        #expect(run.invariants.isEmpty, "\(SteadyJudge.judge(run.history).map(\.summary))")
    }

    @Test("reads alone of a token never near expiry, yet a refresh: I1; not when writes ran, or the token came due")
    func refreshedForNothing() async throws {
        var run = try await Run()
        _ = try await run.server.refresh(run.grant.refreshToken)
        run.ended()
        let found = SteadyJudge.judge(run.history)
        #expect(found.map(\.invariant) == [.singleFlight])
        #expect(
            found.first?.summary.hasPrefix(
                "1 refresh call(s) while callers only read a token that was never near expiry") == true)
        #expect(found.first?.trace.first == "the token expires 300 s after the run ended; no caller reported a 401")

        var writes = run
        writes.history.readsOnly = false
        #expect(writes.invariants.isEmpty)
        // The run ended within the skew of the first token's expiry: a refresh was due.
        run.time.advance(by: .seconds(299.5))
        run.ended()
        #expect(run.invariants.isEmpty)
    }

    @Test(
        "nil from currentToken() with a fresh token and no refresh under way is I12; a refresh during the phase excuses it"
    )
    func misses() async throws {
        var run = try await Run()
        try await run.syncPhase(misses: 3, of: 100)
        let found = SteadyJudge.judge(run.history)
        #expect(found.map(\.invariant) == [.served])
        #expect(
            found.first?.summary.hasPrefix("synchronous reads: currentToken() answered nil 3 time(s) of 103") == true)

        var refreshing = try await Run()
        let grant = refreshing.grant
        let server = refreshing.server
        try await refreshing.syncPhase(misses: 3, of: 100) { _ = try await server.refresh(grant.refreshToken) }
        refreshing.history.readsOnly = false
        #expect(refreshing.invariants.isEmpty, "\(SteadyJudge.judge(refreshing.history).map(\.summary))")
    }

    @Test("an error with no cause is the contract's finding; the ledger is audited")
    func errorsAndLedger() async throws {
        var run = try await Run()
        let now = TokenServer.realNanoseconds()
        run.history.errors = [
            ObservedCall(
                caller: 3, account: 0, kind: .read, phase: "steady reads", startedAt: run.time.now, startedNanos: now,
                endedNanos: now + 10, answer: .error(.cancelled), wasCancelled: false)
        ]
        #expect(run.invariants == [.cancellationIsolated])

        // The same refresh token redeemed twice: the audit's I1 and I7.
        var reused = try await Run()
        _ = try await reused.server.refresh(reused.grant.refreshToken)
        _ = await reused.server.refreshResult(reused.grant.refreshToken)
        reused.history.readsOnly = false
        reused.ended()
        #expect(
            Set(reused.invariants).isSuperset(of: [.noReuse]), "\(SteadyJudge.judge(reused.history).map(\.summary))")
    }
}
