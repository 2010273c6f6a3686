import SessionContract
import SessionOracle
import Testing
import TokenServer

/// Where the clock jumps while calls run (a generated program's expiry, made by one caller while
/// the others call), what a store could not have known is not held against it — and what it could
/// have known still is.
extension ContractJudgeTests {
    /// A read from `from` to `to` (real nanoseconds) over which the store's clock went from
    /// `startedAt` to `endedAt`, answered `answer`.
    static func read(
        _ answer: ObservedCall.Answer, request: CallRequest = .validToken, caller: Int = 1, from: Int64, to: Int64,
        startedAt: TokenInstant, endedAt: TokenInstant, cancelled: Bool = false
    ) -> ObservedCall {
        ObservedCall(
            caller: caller, account: 0, kind: .read, request: request, phase: "test", startedAt: startedAt,
            endedAt: endedAt, startedNanos: from, endedNanos: to, answer: answer, wasCancelled: cancelled)
    }

    @Test("a held token that expires while the call runs: fresh when the clock jumps during calls, I4 otherwise")
    func expiryDuringTheCall() async throws {
        var history = History()
        let grant = try await history.signIn(0)
        let start = history.time.now
        let handed = history.call(history.token(grant.accessToken))
        history.time.advance(by: .seconds(300))
        let now = TokenServer.realNanoseconds()
        let across = Self.read(
            history.token(grant.accessToken), from: now, to: now + 10, startedAt: start, endedAt: history.time.now)
        #expect(history.judge([handed, across], clockMoves: true).isEmpty)
        #expect(history.judge([handed, across]) == [.fresh])
        // Expired before the call started: the store could know, jump or not.
        let after = Self.read(
            history.token(grant.accessToken), from: now + 20, to: now + 30, startedAt: history.time.now,
            endedAt: history.time.now)
        #expect(history.judge([handed, after], clockMoves: true) == [.fresh])
    }

    @Test(
        "a refreshed token nobody had been handed, expired by a jump before the store took it in: no I4; once handed out, I4"
    )
    func jumpBeforeTheStoreTookTheAnswerIn() async throws {
        var history = History()
        let grant = try await history.signIn(0)
        let rotated = try await history.server.refresh(grant.refreshToken)
        history.time.advance(by: .seconds(300))
        let now = TokenServer.realNanoseconds()
        let first = Self.read(
            history.token(rotated.accessToken), from: now, to: now + 10, startedAt: history.time.now,
            endedAt: history.time.now)
        #expect(history.judge([first], clockMoves: true).isEmpty)
        #expect(history.judge([first]) == [.fresh])
        // A later call gets the same token: the store had it, and knew it was expired.
        let second = Self.read(
            history.token(rotated.accessToken), caller: 2, from: now + 20, to: now + 30, startedAt: history.time.now,
            endedAt: history.time.now)
        #expect(history.judge([first, second], clockMoves: true) == [.fresh])
    }

    @Test("'refresh failed' from a refresh whose token a jump expired before the store took it in: shared, not I12")
    func refreshExpiredByAJump() async throws {
        var history = History()
        let grant = try await history.signIn(0)
        let startedAt = history.time.now
        let started = TokenServer.realNanoseconds()
        _ = try await history.server.refresh(grant.refreshToken)
        history.time.advance(by: .seconds(300))
        let failed = Self.read(
            .error(.refreshFailed), request: .tokenRejected(generation: grant.accessToken.generation), from: started,
            to: TokenServer.realNanoseconds(), startedAt: startedAt, endedAt: history.time.now)
        #expect(history.judge([failed], clockMoves: true).isEmpty)
        #expect(history.judge([failed]) == [.served])
    }

    @Test(
        "currentToken() nil after a cancelled 401 of the newest token: no I12 until the server answered its refresh; with no 401, I12"
    )
    func nilAfterCancelledRejection() async throws {
        var history = History()
        let grant = try await history.signIn(0)
        let at = history.time.now
        let handed = history.call(history.token(grant.accessToken))
        let t0 = TokenServer.realNanoseconds()
        let rejected = Self.read(
            .error(.cancelled), request: .tokenRejected(generation: grant.accessToken.generation), caller: 2, from: t0,
            to: t0 + 10, startedAt: at, endedAt: at, cancelled: true)
        let empty = Self.read(
            .none, request: .currentToken, caller: 3, from: t0 + 20, to: t0 + 30, startedAt: at, endedAt: at)
        #expect(history.judge([handed, empty]) == [.served], "a fresh token, no 401, no refresh")
        #expect(history.judge([handed, rejected, empty]).isEmpty, "the refresh not sent yet, or never")
        // Its refresh answered (failed) before the nil: over, and the token must be served again.
        history.server.injectRefreshFaults(.transientFailure)
        _ = try? await history.server.refresh(grant.refreshToken)
        let later = TokenServer.realNanoseconds()
        let afterFailure = Self.read(
            .none, request: .currentToken, caller: 3, from: later, to: later + 10, startedAt: at, endedAt: at)
        #expect(history.judge([handed, rejected, empty]).isEmpty, "answered only after that nil")
        #expect(history.judge([handed, rejected, afterFailure]) == [.served])
    }
}
