import SessionContract
import SessionOracle
import Testing
import TokenServer

/// What a store may still do with an answer it has not finished handing out: a call that joins a
/// failed refresh while one of its waiters is not back shares the failure, and a refresh decided
/// before a fence may present the rotated grant an expired-on-arrival answer left it.
extension ContractJudgeTests {
    static func failed(_ history: History, caller: Int, from: Int64, to: Int64) -> ObservedCall {
        ObservedCall(
            caller: caller, account: 0, kind: .read, request: .validToken, phase: "test", startedAt: history.time.now,
            startedNanos: from, endedNanos: to, answer: .error(.refreshFailed), wasCancelled: false)
    }

    @Test(
        "a call that joins a failed refresh while one of its waiters is not back shares the failure; after, it is I10")
    func failureStillBeingDelivered() async throws {
        var history = History()
        let grant = try await history.signIn(0)
        let started = TokenServer.realNanoseconds()
        history.server.injectRefreshFaults(.transientFailure)
        await #expect(throws: TokenEndpointError.transient) { try await history.server.refresh(grant.refreshToken) }
        let joined = TokenServer.realNanoseconds() + 10
        let joiner = Self.failed(history, caller: 2, from: joined, to: joined + 5)
        let backLater = Self.failed(history, caller: 1, from: started, to: joined + 10)
        #expect(history.judge([backLater, joiner]).isEmpty)
        let backFirst = Self.failed(history, caller: 1, from: started, to: joined - 1)
        #expect(history.judge([backFirst, joiner]) == [.failureSharedNotSticky])
        // One back, another still out: the store was still handing it out.
        let stillOut = Self.failed(history, caller: 3, from: started, to: joined + 20)
        #expect(history.judge([backFirst, stillOut, joiner]).isEmpty)
        // With no other waiter at all, nobody was being handed anything: the failure was replayed.
        #expect(history.judge([joiner]) == [.failureSharedNotSticky])
    }

    @Test("a refresh sent after a sign-out may present the grant an expired-on-arrival answer left; a second may not")
    func lateRefreshOfExpiredOnArrival() async throws {
        var history = History()
        let grant = try await history.signIn(0)
        history.server.injectRefreshFaults(.expiredOnArrival)
        let rotated = try await history.server.refresh(grant.refreshToken)
        history.signOut()
        _ = try? await history.server.refresh(rotated.refreshToken)
        #expect(history.judge([]).isEmpty, "decided before the sign-out, sent after it")
        _ = try? await history.server.refresh(rotated.refreshToken)
        #expect(history.judge([]).contains(.signOutFence))
    }
}
