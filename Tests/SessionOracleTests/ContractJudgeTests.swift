import SessionContract
import SessionOracle
import Synchronization
import Testing
import TokenServer

/// The contract's judge on histories written out by hand: a real server's ledger, the harness's
/// events and calls with chosen outcomes, so each rule is shown on exactly the facts it reads.
@Suite("The contract's judge, on histories written by hand")
struct ContractJudgeTests {
    /// A server, a clock, and two users of account 0; records what the tests make happen.
    struct History {
        let time = ManualTime()
        let server: TokenServer
        let subjects = [[Subject("user-a"), Subject("user-b")]]
        var events: [SessionEvent] = []

        /// `sleeper` waits out each answer's latency in place of the clock (a refresh held in flight).
        init(
            lifetime: Duration = .seconds(300), latency: LatencyModel = .none,
            sleeper: (@Sendable (Duration) async -> Void)? = nil
        ) {
            server = TokenServer(
                configuration: .init(tokenLifetime: lifetime, latency: latency), clock: .manual(time), sleeper: sleeper)
        }

        /// Signs user `slot` in at the server, as the harness's sign-in would.
        mutating func signIn(_ slot: Int) async throws -> TokenGrant {
            let started = TokenServer.realNanoseconds()
            let grant = try await server.signIn(Credentials(subject: subjects[0][slot]))
            let family = server.issuedTokens[grant.accessToken.generation]!.family
            events.append(
                SessionEvent(
                    account: 0, kind: .signIn(slot: slot, family: family), startedNanos: started,
                    returnedNanos: TokenServer.realNanoseconds(), clockAt: time.now))
            return grant
        }

        mutating func signOut() {
            let started = TokenServer.realNanoseconds()
            events.append(
                SessionEvent(
                    account: 0, kind: .signOut, startedNanos: started, returnedNanos: TokenServer.realNanoseconds(),
                    clockAt: time.now))
        }

        /// A call that ran from now until `answer` is recorded, getting `answer`.
        func call(_ answer: ObservedCall.Answer, request: CallRequest = .validToken, caller: Int = 1) -> ObservedCall {
            let started = TokenServer.realNanoseconds()
            return ObservedCall(
                caller: caller, account: 0, kind: .read, request: request, phase: "test", startedAt: time.now,
                startedNanos: started, endedNanos: TokenServer.realNanoseconds() + 1, answer: answer,
                wasCancelled: false)
        }

        func token(_ token: AccessToken) -> ObservedCall.Answer {
            .token(ObservedCall.issued(token, subjects: subjects))
        }

        /// `controlled`: each call's start is its entry into the store, as on `explore`'s executor.
        func judge(
            _ calls: [ObservedCall], skew: Duration = .seconds(1), clockMoves: Bool = false, controlled: Bool = true
        ) -> [Invariant] {
            var judge = ContractJudge(skew: skew, clockMovesDuringCalls: clockMoves, startsAreEntries: controlled)
            var found: [Invariant] = []
            let timeline = SessionTimeline(events: events, entries: server.ledger.entries, issued: server.issuedTokens)
            judge.judge(calls, timeline: timeline) { found.append($0.invariant) }
            judge.judgeServerCalls(timeline) { found.append($0.invariant) }
            return found
        }
    }

    @Test("monotonic order is per session: after a user switch, the new user's lower generation is no regression")
    func monotonicPerSession() async throws {
        var history = History()
        let a = try await history.signIn(0)
        let b = try await history.signIn(1)
        // User A's refresh lands after the switch, with a higher generation than B's token.
        let late = try await history.server.refresh(a.refreshToken)
        #expect(late.accessToken.generation > b.accessToken.generation)
        let leaked = history.call(history.token(late.accessToken))
        let afterwards = history.call(history.token(b.accessToken), caller: 2)
        let found = history.judge([leaked, afterwards])
        #expect(found.contains(.noCrossUserLeak), "A's token after B's sign-in returned is a leak: \(found)")
        #expect(!found.contains(.monotonic), "B's token is B's session's newest: \(found)")
    }

    @Test("a token the server never issued, or issued otherwise, is not genuine")
    func genuine() async throws {
        var history = History()
        let grant = try await history.signIn(0)
        let real = grant.accessToken
        let torn = AccessToken(
            value: String(repeating: "x", count: real.value.utf8.count), subject: real.subject,
            generation: real.generation, expiresAt: real.expiresAt)
        let extended = AccessToken(
            value: real.value, subject: real.subject, generation: real.generation,
            expiresAt: real.expiresAt + .seconds(60))
        let earlier = AccessToken(
            value: real.value, subject: real.subject, generation: real.generation,
            expiresAt: real.expiresAt - .seconds(60))
        #expect(history.judge([history.call(history.token(real))]).isEmpty)
        #expect(history.judge([history.call(history.token(torn))]) == [.genuine])
        #expect(history.judge([history.call(history.token(extended))]) == [.genuine])
        // A store may treat a token as expiring sooner than it does: that misleads no one.
        #expect(history.judge([history.call(history.token(earlier))]).isEmpty)
    }

    @Test("a token within the refresh skew is fresh only if the store got it during the call")
    func skew() async throws {
        var history = History(lifetime: .seconds(10))
        let grant = try await history.signIn(0)
        history.time.advance(by: .milliseconds(9_500))
        #expect(history.judge([history.call(history.token(grant.accessToken))]) == [.fresh])
        #expect(history.judge([history.call(history.token(grant.accessToken))], skew: .milliseconds(100)).isEmpty)
    }

    @Test("currentToken() answers nil only with a reason: none while the session is quiet and its token fresh")
    func synchronousNil() async throws {
        var history = History()
        let grant = try await history.signIn(0)
        let handed = history.call(history.token(grant.accessToken))
        // Nothing handed out yet: the store may still be taking the grant in.
        #expect(history.judge([history.call(.none, request: .currentToken)]).isEmpty)
        #expect(history.judge([handed, history.call(.none, request: .currentToken, caller: 2)]) == [.served])
        history.signOut()
        #expect(history.judge([handed, history.call(.none, request: .currentToken, caller: 2)]).isEmpty)
    }

    /// Between a 401 and the server's first sight of the refresh it starts, the request is on
    /// its way (over a socket, or on a thread not yet run) and the 401's caller waits for it:
    /// while that caller waits, the store may answer nil.
    @Test("a 401 of the newest token excuses a nil while it runs; a stale 401, or one that returned, does not")
    func nilAfterRejection() async throws {
        var history = History()
        let first = try await history.signIn(0)
        let second = try await history.server.refresh(first.refreshToken)
        let handed = history.call(history.token(second.accessToken))
        /// A 401 of `token` that started now and returns `returnsAfter` nanoseconds later.
        func rejection(_ token: AccessToken, returnsAfter: Int64 = 1_000_000_000) -> ObservedCall {
            let started = TokenServer.realNanoseconds()
            return ObservedCall(
                caller: 3, account: 0, kind: .rejection, request: .tokenRejected(generation: token.generation),
                phase: "test", startedAt: history.time.now, startedNanos: started, endedNanos: started + returnsAfter,
                answer: .error(.cancelled), wasCancelled: true)
        }
        let stale = rejection(first.accessToken)
        #expect(history.judge([handed, stale, history.call(.none, request: .currentToken, caller: 2)]) == [.served])
        let running = rejection(second.accessToken)
        #expect(history.judge([handed, running, history.call(.none, request: .currentToken, caller: 2)]).isEmpty)
        // A 401 that had returned before the nil started, its refresh answered, excuses nothing:
        // that refresh was over.
        let returned = rejection(second.accessToken, returnsAfter: 1)
        history.server.injectRefreshFaults(.transientFailure)
        _ = try? await history.server.refresh(second.refreshToken)
        try await Task.sleep(for: .milliseconds(1))
        #expect(history.judge([handed, returned, history.call(.none, request: .currentToken, caller: 2)]) == [.served])
        // Nor does one that started after the nil returned.
        let early = history.call(.none, request: .currentToken, caller: 2)
        try await Task.sleep(for: .milliseconds(1))
        #expect(history.judge([handed, early, rejection(second.accessToken)]) == [.served])
    }

    @Test("errors are judged by the call's own session: an old refusal does not excuse the next session's")
    func errorsPerSession() async throws {
        var history = History()
        let first = try await history.signIn(0)
        history.server.revokeSessions(of: history.subjects[0][0])
        await #expect(throws: TokenEndpointError.invalidGrant) { try await history.server.refresh(first.refreshToken) }
        let told = history.call(.error(.refreshTokenRevoked))
        #expect(history.judge([told]).isEmpty)
        _ = try await history.signIn(0)
        let sticky = history.call(.error(.refreshTokenRevoked), caller: 2)
        #expect(history.judge([told, sticky]) == [.sessionKept])
    }

    /// The server decides refreshes in the order it receives them and answers each after its own
    /// latency: the reuse that revokes a family can be answered after a later refresh of that
    /// family was refused, and a caller told 'revoked' by the later one was told the truth.
    @Test("a session is refused from the earliest refusal answered, not the first one decided")
    func refusalAnsweredOutOfOrder() async throws {
        let hold = AnswerHold()
        var history = History(latency: .fixed(.milliseconds(1)), sleeper: { _ in await hold.pass() })
        let first = try await history.signIn(0)
        let server = history.server
        let second = try await server.refresh(first.refreshToken)
        hold.arm()
        let reuse = Task { try? await server.refresh(first.refreshToken) }
        await hold.untilHeld()
        await #expect(throws: TokenEndpointError.invalidGrant) { try await server.refresh(second.refreshToken) }
        let told = history.call(.error(.refreshTokenRevoked))
        hold.release()
        _ = await reuse.value
        let outcomes = server.ledger.entries.filter { $0.call == .refresh }.map(\.outcome)
        #expect(outcomes == [.issued, .reuseDetected, .familyRevoked])
        #expect(history.judge([told]).isEmpty)
    }

    @Test("a refusal the client hung up on before it arrived told the store nothing: a refresh after it is no I27")
    func refusalLostByClient() async throws {
        let hold = AnswerHold()
        var history = History(latency: .fixed(.milliseconds(1)), sleeper: { _ in await hold.pass() })
        let grant = try await history.signIn(0)
        let server = history.server
        server.revokeSessions(of: history.subjects[0][0])
        hold.arm()
        let abandoned = Task { try? await server.refresh(grant.refreshToken) }
        await hold.untilHeld()
        abandoned.cancel()
        hold.release()
        _ = await abandoned.value
        await #expect(throws: TokenEndpointError.invalidGrant) { try await server.refresh(grant.refreshToken) }
        let refreshes = server.ledger.entries.filter { $0.call == .refresh }
        #expect(refreshes.map(\.outcome) == [.familyRevoked, .familyRevoked])
        #expect(refreshes.map(\.lostByClient) == [true, false])
        #expect(history.judge([]).isEmpty)
        let told = history.call(.error(.refreshTokenRevoked))
        #expect(history.judge([told]).isEmpty, "the second refusal reached the store")
    }

    @Test("once a caller was told the session was refused, none gets its token, and it is not refreshed")
    func revocationFinal() async throws {
        var history = History()
        let grant = try await history.signIn(0)
        let rejected = try await history.server.refresh(grant.refreshToken)
        history.server.revokeSessions(of: history.subjects[0][0])
        await #expect(throws: TokenEndpointError.invalidGrant) {
            try await history.server.refresh(rejected.refreshToken)
        }
        let told = history.call(.error(.refreshTokenRevoked))
        let zombie = history.call(history.token(rejected.accessToken), caller: 2)
        #expect(history.judge([told, zombie]) == [.revocationFinal])
        await #expect(throws: TokenEndpointError.invalidGrant) {
            try await history.server.refresh(rejected.refreshToken)
        }
        #expect(history.judge([told]) == [.revocationFinal])
    }

    @Test("a sign-in no signIn() asked for is the store's own")
    func ownSignIn() async throws {
        var history = History()
        _ = try await history.signIn(0)
        _ = try await history.server.signIn(Credentials(subject: history.subjects[0][0]))
        #expect(history.judge([]) == [.sessionKept])
    }

    @Test("a refusal right after three refreshes is the store's own rate limit unless the run is paced")
    func storeLimit() async throws {
        var history = History()
        var grant = try await history.signIn(0)
        for _ in 0..<2 { grant = try await history.server.refresh(grant.refreshToken) }
        let early = history.call(.error(.refreshFailed))
        #expect(history.judge([early]) == [.served], "two refreshes are no rate limit yet")
        grant = try await history.server.refresh(grant.refreshToken)
        let refused = history.call(.error(.refreshFailed))
        let timeline = SessionTimeline(
            events: history.events, entries: history.server.ledger.entries, issued: history.server.issuedTokens)
        var compressed = ContractJudge(skew: .seconds(1))
        var found: [Invariant] = []
        compressed.judge([refused], timeline: timeline) { found.append($0.invariant) }
        #expect(found.isEmpty && compressed.refusedByStoreLimit.count == 1)
        var paced = ContractJudge(skew: .seconds(1), paced: true)
        paced.judge([refused], timeline: timeline) { found.append($0.invariant) }
        #expect(found == [.served])
    }
}

/// Holds the server's first answer after ``arm()`` in flight until ``release()``; every other
/// answer passes at once.
final class AnswerHold: Sendable {
    private struct State {
        var armed = false
        var released = false
        var held: CheckedContinuation<Void, Never>?
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    func arm() { state.withLock { $0.armed = true } }

    /// The server's sleeper: waits here if armed and nothing is held yet.
    func pass() async {
        await withCheckedContinuation { continuation in
            let waiters: [CheckedContinuation<Void, Never>]? = state.withLock { state in
                guard state.armed, !state.released, state.held == nil else { return nil }
                state.held = continuation
                defer { state.waiting = [] }
                return state.waiting
            }
            guard let waiters else { return continuation.resume() }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// Returns once an answer is held.
    func untilHeld() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.held != nil { return true }
                state.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    func release() {
        let held = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.released = true
            defer { state.held = nil }
            return state.held
        }
        held?.resume()
    }
}
