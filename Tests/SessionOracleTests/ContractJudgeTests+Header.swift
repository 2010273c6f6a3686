import SessionContract
import SessionOracle
import SessionSync
import Synchronization
import Testing
import TokenServer

/// Every sentence of ``ContractJudge``'s header, each on a history written by hand: a call
/// belongs to the session current when it started, and what it got must be one of the outcomes
/// that session's events allow — of that session, not merely of that account.
extension ContractJudgeTests {
    /// A call that started at `started` (real nanoseconds, taken before what happened during it)
    /// and returns now, getting `answer`.
    static func call(
        _ history: History, _ answer: ObservedCall.Answer, started: Int64, request: CallRequest = .validToken,
        caller: Int = 1, account: Int = 0, cancelled: Bool = false
    ) -> ObservedCall {
        ObservedCall(
            caller: caller, account: account, kind: .read, request: request, phase: "test", startedAt: history.time.now,
            startedNanos: started, endedNanos: TokenServer.realNanoseconds() + 1, answer: answer,
            wasCancelled: cancelled)
    }

    /// A history where user `from`'s session has a refresh held in flight at the server while
    /// user `to` signs in, answered after: a call that started before the sign-in and waited on
    /// that refresh belongs to `from`'s session.
    static func switchDuringRefresh(from: Int, to: Int) async throws -> (
        History, started: Int64, TokenGrant, TokenGrant
    ) {
        let hold = AnswerHold()
        var history = History(latency: .fixed(.milliseconds(1)), sleeper: { _ in await hold.pass() })
        let first = try await history.signIn(from)
        let server = history.server
        let started = TokenServer.realNanoseconds()
        hold.arm()
        let refresh = Task { try? await server.refresh(first.refreshToken) }
        await hold.untilHeld()
        let next = try await history.signIn(to)
        hold.release()
        _ = await refresh.value
        return (history, started, first, next)
    }

    @Test(
        "a call that waited on its session's refresh while another user signed in gets none of that user's tokens (I9)")
    func laterSessionOtherUser() async throws {
        let (history, started, _, b) = try await Self.switchDuringRefresh(from: 0, to: 1)
        let waiter = Self.call(history, history.token(b.accessToken), started: started)
        #expect(history.judge([waiter]) == [.noCrossUserLeak], "the call was user A's: 'signed out' or A's token")
        // In real time the start dates nothing: the refresh in flight was other callers', and this
        // one's thread may not have run into the store until after B's sign-in.
        #expect(history.judge([waiter], controlled: false).isEmpty)
        // Started after B's sign-in began: B's session is current for it.
        let after = history.call(history.token(b.accessToken), caller: 2)
        #expect(history.judge([after]).isEmpty)
        #expect(history.judge([Self.call(history, .error(.signedOut), started: started)]).isEmpty)
    }

    /// A call's start is read before it enters the store; with nothing of its session under way,
    /// the store may first see it after a sign-in that began later (its thread not run till then).
    @Test("with nothing of its session under way, a call that started before a sign-in may get the new session's token")
    func laterSessionNotWaiting() async throws {
        var history = History()
        _ = try await history.signIn(0)
        let started = TokenServer.realNanoseconds()
        let b = try await history.signIn(1)
        #expect(history.judge([Self.call(history, history.token(b.accessToken), started: started)]).isEmpty)

        var quiet = History()
        let before = TokenServer.realNanoseconds()
        let grant = try await quiet.signIn(0)
        #expect(quiet.judge([Self.call(quiet, quiet.token(grant.accessToken), started: before)]).isEmpty)
        #expect(quiet.judge([Self.call(quiet, .error(.signedOut), started: before)]).isEmpty)
    }

    @Test("a call that waited on its session's refresh gets no token of the same user's later session (I8)")
    func laterSessionSameUser() async throws {
        let (history, started, first, again) = try await Self.switchDuringRefresh(from: 0, to: 0)
        #expect(
            history.judge([Self.call(history, history.token(again.accessToken), started: started)]) == [.signOutFence])
        // Its own session's token, while the fence was under way, is the driver's to judge (a waiter
        // of a discarded refresh); the judge allows the session current at the start.
        #expect(history.judge([Self.call(history, history.token(first.accessToken), started: started)]).isEmpty)
    }

    @Test("an error's cause must be in the call's own session: a later session's refusal or failure excuses nothing")
    func laterSessionErrors() async throws {
        var history = History()
        _ = try await history.signIn(0)
        let started = TokenServer.realNanoseconds()
        history.signOut()
        let later = try await history.signIn(1)
        history.server.revokeSessions(of: history.subjects[0][1])
        await #expect(throws: TokenEndpointError.invalidGrant) { try await history.server.refresh(later.refreshToken) }
        // Started while A's session was current; the sign-out during it makes 'signed out' fair,
        // and B's refusal is not its session's.
        #expect(history.judge([Self.call(history, .error(.signedOut), started: started)]).isEmpty)
        #expect(history.judge([Self.call(history, .error(.refreshTokenRevoked), started: started)]) == [.sessionKept])
        var fresh = History()
        _ = try await fresh.signIn(0)
        let waited = TokenServer.realNanoseconds()
        let b = try await fresh.signIn(1)
        fresh.server.injectRefreshFaults(.transientFailure)
        await #expect(throws: TokenEndpointError.transient) { try await fresh.server.refresh(b.refreshToken) }
        #expect(fresh.judge([Self.call(fresh, .error(.refreshFailed), started: waited)]) == [.served])
    }

    @Test("a token of another account is a leak across users (I9)")
    func otherAccount() async throws {
        var history = History()
        let grant = try await history.signIn(0)
        let started = TokenServer.realNanoseconds()
        let other = Self.call(history, history.token(grant.accessToken), started: started, account: 1)
        #expect(history.judge([other]).contains(.noCrossUserLeak))
    }

    @Test("a call that started after the sign-out returned gets nothing of the ended session (I8)")
    func afterSignOut() async throws {
        var history = History()
        let grant = try await history.signIn(0)
        history.signOut()
        #expect(history.judge([history.call(history.token(grant.accessToken))]) == [.signOutFence])
        #expect(history.judge([history.call(.error(.signedOut))]).isEmpty)
    }

    @Test("a token expired when returned is not fresh (I4)")
    func expired() async throws {
        var history = History(lifetime: .seconds(10))
        let grant = try await history.signIn(0)
        history.time.advance(by: .seconds(11))
        #expect(history.judge([history.call(history.token(grant.accessToken))]) == [.fresh])
    }

    @Test("within a session, no call gets an older generation than one handed out before it started (I5)")
    func monotonicWithinSession() async throws {
        var history = History()
        let first = try await history.signIn(0)
        let early = history.call(history.token(first.accessToken), caller: 3)
        let second = try await history.server.refresh(first.refreshToken)
        let newer = history.call(history.token(second.accessToken))
        let older = history.call(history.token(first.accessToken), caller: 2)
        #expect(history.judge([early, newer, older]) == [.monotonic])
        #expect(history.judge([early, newer]).isEmpty, "handed out in order")
    }

    @Test("a 401 brings a newer token than the one refused (I6)")
    func rejectionBringsNewer() async throws {
        var history = History()
        let first = try await history.signIn(0)
        let refused = history.call(
            history.token(first.accessToken), request: .tokenRejected(generation: first.accessToken.generation))
        #expect(history.judge([refused]) == [.staleRejectionDoesNotRefresh])
        let second = try await history.server.refresh(first.refreshToken)
        let newer = history.call(
            history.token(second.accessToken), request: .tokenRejected(generation: first.accessToken.generation))
        #expect(history.judge([newer]).isEmpty)
    }

    @Test("currentToken() gives no token while a refresh of it spans the whole call (I4)")
    func syncReadDuringRefresh() async throws {
        // Once the session is in, answers wait in a parking lot: the refresh is in flight, at the
        // server, for the whole read.
        let answers = ParkingLot()
        let holding = Atomic(false)
        var history = History(latency: .fixed(.milliseconds(1))) { _ in
            if holding.load(ordering: .acquiring) { await answers.park() }
        }
        let grant = try await history.signIn(0)
        holding.store(true, ordering: .releasing)
        let server = history.server
        let refresh = Task { await server.refreshResult(grant.refreshToken) }
        while answers.parked == 0 { await Task.yield() }
        let read = history.call(history.token(grant.accessToken), request: .currentToken)
        #expect(history.judge([read]) == [.fresh])
        #expect(
            history.judge([history.call(history.token(grant.accessToken))]).isEmpty, "validToken() may wait or answer")
        answers.releaseAll(stayOpen: true)
        _ = await refresh.value
    }

    @Test(
        "'refresh failed' needs a failure while the call waited: an earlier one replayed is sticky (I10), none is I12")
    func refreshFailedCauses() async throws {
        var history = History()
        let grant = try await history.signIn(0)
        #expect(history.judge([history.call(.error(.refreshFailed))]) == [.served], "no failure at all")
        let started = TokenServer.realNanoseconds()
        history.server.injectRefreshFaults(.transientFailure)
        await #expect(throws: TokenEndpointError.transient) { try await history.server.refresh(grant.refreshToken) }
        let waited = Self.call(history, .error(.refreshFailed), started: started)
        #expect(history.judge([waited]).isEmpty)
        #expect(history.judge([waited, history.call(.error(.refreshFailed), caller: 2)]) == [.failureSharedNotSticky])
    }

    @Test(
        "'signed out' needs no session, a sign-in or sign-out during the call, or the server's refusal by its end (I13)"
    )
    func signedOutCauses() async throws {
        var history = History()
        let grant = try await history.signIn(0)
        #expect(history.judge([history.call(.error(.signedOut))]) == [.sessionKept])
        // Refused while the call waited: a waiter of the refused refresh may be told 'signed out'.
        let started = TokenServer.realNanoseconds()
        history.server.revokeSessions(of: history.subjects[0][0])
        await #expect(throws: TokenEndpointError.invalidGrant) { try await history.server.refresh(grant.refreshToken) }
        #expect(history.judge([Self.call(history, .error(.signedOut), started: started)]).isEmpty)
        #expect(history.judge([Self.call(history, .error(.refreshTokenRevoked), started: started)]).isEmpty)
        #expect(history.judge([history.call(.error(.signedOut), caller: 2)]).isEmpty, "and after it")
    }

    @Test("'signed out' after the server's refusal says the store knew: a token of that session after it is I27")
    func signedOutAfterRefusalIsFinal() async throws {
        var history = History()
        let grant = try await history.signIn(0)
        let started = TokenServer.realNanoseconds()
        history.server.revokeSessions(of: history.subjects[0][0])
        await #expect(throws: TokenEndpointError.invalidGrant) { try await history.server.refresh(grant.refreshToken) }
        let told = Self.call(history, .error(.signedOut), started: started)
        let cached = history.call(history.token(grant.accessToken), caller: 2)
        #expect(history.judge([told, cached]) == [.revocationFinal])
        #expect(history.judge([cached]).isEmpty, "nobody was told yet: the store may not know")
    }

    @Test("'refresh failed' with the server's refusal behind it is I12: the session is over, it will not pass")
    func refreshFailedAfterRefusal() async throws {
        var history = History()
        var grant = try await history.signIn(0)
        // Three refreshes first: the store's own rate limit would excuse a bare 'refresh failed'.
        for _ in 0..<3 { grant = try await history.server.refresh(grant.refreshToken) }
        let started = TokenServer.realNanoseconds()
        history.server.revokeSessions(of: history.subjects[0][0])
        await #expect(throws: TokenEndpointError.invalidGrant) { try await history.server.refresh(grant.refreshToken) }
        #expect(history.judge([Self.call(history, .error(.refreshFailed), started: started)]) == [.served])
        #expect(history.judge([Self.call(history, .error(.refreshTokenRevoked), started: started)]).isEmpty)
    }

    @Test("'cancelled' only for a caller that was cancelled (I11); any other error from a token request is I12")
    func otherErrors() async throws {
        var history = History()
        _ = try await history.signIn(0)
        #expect(history.judge([history.call(.error(.cancelled))]) == [.cancellationIsolated])
        let started = TokenServer.realNanoseconds()
        #expect(history.judge([Self.call(history, .error(.refreshFailed), started: started, cancelled: true)]).isEmpty)
        #expect(history.judge([history.call(.error(.signInFailed))]) == [.served])
        #expect(history.judge([history.call(.error(.stepUpDenied))]) == [.served])
    }

    @Test(
        "'sign-in failed' with no refusal: not judged against a server that may fail on the way; I12 against a healthy one"
    )
    func signInFailedWithoutRefusal() {
        let started = TokenServer.realNanoseconds()
        let event = SessionEvent(
            account: 0, kind: .signIn(slot: 0, family: nil), startedNanos: started,
            returnedNanos: TokenServer.realNanoseconds() + 1, error: .signInFailed)
        let timeline = SessionTimeline(events: [event], entries: [], issued: [:])
        #expect(ContractJudge(skew: .seconds(1)).serverCallFindings(timeline).isEmpty)
        let healthy = ContractJudge(skew: .seconds(1), healthyServer: true).serverCallFindings(timeline)
        #expect(healthy.map(\.invariant) == [.served])
        #expect(healthy.first?.trace == ["the server got no sign-in call during it"])
    }
}
