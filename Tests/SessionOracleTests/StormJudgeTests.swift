import SessionContract
import SessionOracle
import Testing
import TokenServer

/// The storm scenarios' judge on histories written by hand: a real server's ledger (each test
/// makes the refresh calls it needs), the calls with chosen answers and timing, so each check is
/// shown on exactly the facts it reads.
@Suite("The storm judge, on histories written by hand")
struct StormJudgeTests {
    static let subjects = [[Subject("storm-user-a"), Subject("storm-user-b")]]

    static func server() -> TokenServer { TokenServer(configuration: .init(tokenLifetime: .seconds(300))) }

    static func refreshes(_ server: TokenServer) -> [LedgerEntry] {
        server.ledger.entries.filter { $0.call == .refresh }
    }

    /// A call of account 0 that ran from `started` to `ended` (real nanoseconds) and got `answer`.
    static func call(
        _ answer: ObservedCall.Answer, caller: Int = 1, started: Int64, ended: Int64, cancelled: Bool = false
    ) -> ObservedCall {
        ObservedCall(
            caller: caller, account: 0, kind: .refreshWait, phase: "round 3 storm",
            startedAt: TokenInstant(nanoseconds: 0),
            startedNanos: started, endedNanos: ended, answer: answer, wasCancelled: cancelled)
    }

    static func token(_ token: AccessToken) -> ObservedCall.Answer {
        .token(ObservedCall.issued(token, subjects: subjects))
    }

    /// What the judge finds of `observations`, each judged as the driver records it, in round 3.
    static func judge(_ observations: [StormRound.Observation], timeline: SessionTimeline) -> [ContractJudge.Finding] {
        observations.flatMap { StormJudge.judge($0, round: 3, timeline: timeline) }
    }

    static func timeline(_ server: TokenServer, events: [SessionEvent] = []) -> SessionTimeline {
        SessionTimeline(events: events, entries: server.ledger.entries, issued: server.issuedTokens)
    }

    @Test("three refresh calls for one expiry against a healthy server are I1; one is nothing")
    func oneRefresh() async throws {
        let server = Self.server()
        let grant = try await server.signIn(Credentials(subject: Self.subjects[0][0]))
        _ = await server.refreshResult(grant.refreshToken)
        let one = Self.judge(
            [.refreshes(attempts: Self.refreshes(server), what: "expiry", released: nil, staleAfterSuccess: false)],
            timeline: Self.timeline(server))
        #expect(one.isEmpty, "\(one.map(\.summary))")
        for _ in 0..<2 { _ = await server.refreshResult(grant.refreshToken) }
        let three = Self.judge(
            [.refreshes(attempts: Self.refreshes(server), what: "expiry", released: nil, staleAfterSuccess: false)],
            timeline: Self.timeline(server))
        #expect(three.map(\.invariant) == [.singleFlight])
        #expect(three.first?.summary == "3 refresh calls for one expiry against a healthy server (round 3)")
        #expect(three.first?.trace.count == 3)
    }

    @Test("a 401 storm whose later refreshes were all sent after the first succeeded is I6, not I1")
    func staleAfterSuccess() async throws {
        let server = Self.server()
        let grant = try await server.signIn(Credentials(subject: Self.subjects[0][0]))
        for _ in 0..<2 { _ = await server.refreshResult(grant.refreshToken) }
        let found = Self.judge(
            [.refreshes(attempts: Self.refreshes(server), what: "401 storm", released: nil, staleAfterSuccess: true)],
            timeline: Self.timeline(server))
        #expect(found.map(\.invariant) == [.staleRejectionDoesNotRefresh])
        #expect(
            found.first?.summary.hasPrefix("1 more refresh call(s) after the 401 storm's refresh had succeeded") == true
        )
    }

    @Test("a storm against a session the server had refused is no I1")
    func refusedSession() async throws {
        let server = Self.server()
        let grant = try await server.signIn(Credentials(subject: Self.subjects[0][0]))
        server.revokeSessions(of: Self.subjects[0][0])
        for _ in 0..<3 { _ = await server.refreshResult(grant.refreshToken) }
        let found = Self.judge(
            [.refreshes(attempts: Self.refreshes(server), what: "expiry", released: nil, staleAfterSuccess: false)],
            timeline: Self.timeline(server))
        #expect(found.isEmpty, "\(found.map(\.summary))")
    }

    @Test(
        "waiters of one refresh that got different answers are I2; a caller that came after its answer is not a waiter")
    func sameOutcome() async throws {
        let server = Self.server()
        let grant = try await server.signIn(Credentials(subject: Self.subjects[0][0]))
        let started = TokenServer.realNanoseconds()
        let fresh = try await server.refresh(grant.refreshToken)
        let attempts = Self.refreshes(server)
        let answered = try #require(attempts.first?.respondedAt)
        let after = answered + 1_000
        let agreeing = [
            Self.call(Self.token(fresh.accessToken), caller: 1, started: started, ended: after),
            Self.call(Self.token(fresh.accessToken), caller: 2, started: started, ended: after),
            // After the answer: it may get anything the contract allows, and is not a waiter.
            Self.call(.error(.refreshFailed), caller: 3, started: after, ended: after + 10),
            // Cancelled by the harness: its 'cancelled' is its own.
            Self.call(.error(.cancelled), caller: 4, started: started, ended: after, cancelled: true),
        ]
        #expect(Self.judge([.waiters(agreeing, attempts: attempts)], timeline: Self.timeline(server)).isEmpty)
        let split = agreeing + [Self.call(.error(.refreshFailed), caller: 5, started: started, ended: after)]
        let found = Self.judge([.waiters(split, attempts: attempts)], timeline: Self.timeline(server))
        #expect(found.map(\.invariant) == [.sameOutcome])
        #expect(
            found.first?.trace.count == 3,
            "the refresh, then each answer with how many got it: \(found.first?.trace ?? [])")
    }

    @Test("three failed attempts while one storm waited are I10; a refresh after one succeeded is I1")
    func retryStorm() async throws {
        let server = Self.server()
        let grant = try await server.signIn(Credentials(subject: Self.subjects[0][0]))
        server.scriptRefreshes([.transientFailure, .transientFailure])
        for _ in 0..<2 { _ = await server.refreshResult(grant.refreshToken) }
        #expect(
            Self.judge([.failedRefreshes(Self.refreshes(server))], timeline: Self.timeline(server)).isEmpty,
            "two attempts: the waiters' one and a late caller's")
        server.scriptRefreshes([.transientFailure])
        _ = await server.refreshResult(grant.refreshToken)
        let storm = Self.judge([.failedRefreshes(Self.refreshes(server))], timeline: Self.timeline(server))
        #expect(storm.map(\.invariant) == [.failureSharedNotSticky])
        _ = await server.refreshResult(grant.refreshToken)
        _ = await server.refreshResult(grant.refreshToken)
        let again = Self.judge([.failedRefreshes(Self.refreshes(server))], timeline: Self.timeline(server))
        #expect(again.map(\.invariant) == [.failureSharedNotSticky, .singleFlight])
    }

    @Test("stale 401s that reached the server, or were answered with another token than the current one, are I6")
    func staleRejections() async throws {
        let server = Self.server()
        let grant = try await server.signIn(Credentials(subject: Self.subjects[0][0]))
        let current = try await server.refresh(grant.refreshToken)
        let now = TokenServer.realNanoseconds()
        let served = [Self.call(Self.token(current.accessToken), started: now, ended: now + 10)]
        let clean = StormRound.StaleRejections(
            calls: served, stale: [grant.accessToken.generation], current: [current.accessToken.generation],
            refreshCalls: 0, refreshes: [])
        #expect(Self.judge([.staleRejections(clean)], timeline: Self.timeline(server)).isEmpty)

        var refreshed = clean
        refreshed.refreshCalls = 1
        refreshed.refreshes = Self.refreshes(server)
        let sent = Self.judge([.staleRejections(refreshed)], timeline: Self.timeline(server))
        #expect(sent.map(\.invariant) == [.staleRejectionDoesNotRefresh])
        #expect(sent.first?.summary.hasPrefix("1 refresh call(s) for 401s on a token older") == true)

        var answered = clean
        answered.calls = [Self.call(Self.token(grant.accessToken), started: now, ended: now + 10)]
        let old = Self.judge([.staleRejections(answered)], timeline: Self.timeline(server))
        #expect(old.map(\.invariant) == [.staleRejectionDoesNotRefresh])
        #expect(old.first?.summary.contains("not the current \(current.accessToken.generation)") == true)
    }

    @Test(
        "a waiter of a refresh a fence discarded: a token of the ended session is I8 (I9 across a switch); signed out is nothing"
    )
    func discardedWaiters() async throws {
        let server = Self.server()
        let a = try await server.signIn(Credentials(subject: Self.subjects[0][0]))
        let landed = try await server.refresh(a.refreshToken)
        let b = try await server.signIn(Credentials(subject: Self.subjects[0][1]))
        let endedFamily = try #require(server.issuedTokens[a.accessToken.generation]?.family)
        let now = TokenServer.realNanoseconds()
        func waiters(_ answer: ObservedCall.Answer) -> [ObservedCall] {
            [
                Self.call(.error(.signedOut), caller: 1, started: now, ended: now + 10),
                Self.call(answer, caller: 2, started: now, ended: now + 10),
            ]
        }
        func discarded(_ answer: ObservedCall.Answer, fence: String, switching: Bool, signedIn: Bool, slot: Int)
            -> [ContractJudge.Finding]
        {
            Self.judge(
                [
                    .discardedWaiters(
                        .init(
                            waiters: waiters(answer), ended: [endedFamily], fence: fence, switchesUser: switching,
                            leavesSignedIn: signedIn, signedInSlot: [slot]))
                ],
                timeline: Self.timeline(server))
        }
        let leak = discarded(
            Self.token(landed.accessToken), fence: "sign-out", switching: false, signedIn: false, slot: 0)
        #expect(leak.map(\.invariant) == [.signOutFence])
        #expect(
            leak.first?.trace.last?.hasPrefix("issued by ") == true,
            "the refresh that issued it: \(leak.first?.trace ?? [])")
        let crossed = discarded(
            Self.token(landed.accessToken), fence: "user switch", switching: true, signedIn: true, slot: 1)
        #expect(crossed.map(\.invariant) == [.noCrossUserLeak])
        // The session the switch began: the contract's to judge, not this check's.
        #expect(
            discarded(Self.token(b.accessToken), fence: "user switch", switching: true, signedIn: true, slot: 1).isEmpty
        )
        // After a plain sign-out nobody is signed in: any token is I8.
        let after = discarded(Self.token(b.accessToken), fence: "sign-out", switching: false, signedIn: false, slot: 0)
        #expect(after.map(\.invariant) == [.signOutFence])
        #expect(after.first?.summary.hasSuffix("not 'signed out' (round 3)") == true)
        #expect(discarded(.error(.signedOut), fence: "sign-out", switching: false, signedIn: false, slot: 0).isEmpty)
    }

    @Test("a round's calls are judged against the contract, with what earlier rounds taught it")
    func roundCalls() async throws {
        let server = Self.server()
        let started = TokenServer.realNanoseconds()
        let grant = try await server.signIn(Credentials(subject: Self.subjects[0][0]))
        let family = try #require(server.issuedTokens[grant.accessToken.generation]?.family)
        let signIn = SessionEvent(
            account: 0, kind: .signIn(slot: 0, family: family), startedNanos: started,
            returnedNanos: TokenServer.realNanoseconds())
        let now = TokenServer.realNanoseconds()
        var round = StormRound(number: 3)
        // Not cancelled, yet told 'cancelled': I11, the contract's finding.
        round.calls = [Self.call(.error(.cancelled), started: now, ended: now + 10)]
        var contract = ContractJudge(skew: .seconds(1))
        let timeline = Self.timeline(server, events: [signIn])
        #expect(
            StormJudge.judge(round, timeline: timeline, contract: &contract).map(\.invariant) == [.cancellationIsolated]
        )
        // The next round's call of a 401 for generation 1 is known to the judge from now on.
        var next = StormRound(number: 4)
        next.calls = [
            ObservedCall(
                caller: 2, account: 0, kind: .rejection,
                request: .tokenRejected(generation: grant.accessToken.generation),
                phase: "round 4 storm", startedAt: TokenInstant(nanoseconds: 0), startedNanos: now,
                endedNanos: now + 10,
                answer: Self.token(grant.accessToken), wasCancelled: false)
        ]
        _ = StormJudge.judge(next, timeline: timeline, contract: &contract)
        #expect(contract.rejections[grant.accessToken.generation]?.count == 1)
    }
}
