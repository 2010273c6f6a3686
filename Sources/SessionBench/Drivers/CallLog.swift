import SessionContract
import SessionOracle
import SessionSync
import Synchronization
import TokenServer

/// The calls, sign-ins and sign-outs of a driver that makes them from tasks of its own (a
/// subscriber's scenario, a step-up burst), recorded in the calling task as each returns, then
/// judged against the contract's model like the round scenarios' calls.
final class CallLog: Sendable {
    private let recorded = Mutex<(calls: [ObservedCall], events: [SessionEvent])>(([], []))
    /// The users of account 0, by slot.
    let subjects: [[Subject]]
    let clock: TokenClock
    let server: TokenServer

    init(users: [Subject], clock: TokenClock, server: TokenServer) {
        subjects = [users]
        self.clock = clock
        self.server = server
    }

    /// The calls recorded so far, in the order they returned.
    var calls: [ObservedCall] { recorded.withLock(visibleTo: self) { $0.calls } }

    /// Makes `request` on `store` and records it; `cancelled`: the calling task is cancelled at some
    /// point (before, during or after the call), so a `cancelled` answer is its due.
    func call(
        _ request: StoreCall, on store: any SessionStore, caller: Int = -1, kind: OperationKind = .read, phase: String,
        cancelled: Bool = false
    ) async -> Result<AccessToken, SessionError> {
        let (call, token) = await request.perform(
            on: store, caller: caller, account: 0, kind: kind, phase: phase, clock: clock, subjects: subjects,
            cancelled: cancelled)
        recorded.withLock(visibleTo: self) { $0.calls.append(call) }
        if let token { return .success(token) }
        return .failure(call.error ?? .signedOut)
    }

    /// Signs `user` in on `store` and records it.
    func signIn(_ user: Subject, on store: any SessionStore) async throws(SessionError) {
        let t0 = TokenServer.realNanoseconds()
        let at = clock.now()
        var failure: SessionError?
        do throws(SessionError) { try await store.signIn(Credentials(subject: user)) } catch { failure = error }
        let event = SessionEvent.signIn(
            account: 0, slot: subjects[0].firstIndex(of: user) ?? 0, from: t0, to: TokenServer.realNanoseconds(),
            error: failure, clockAt: at, ledger: server.ledger)
        recorded.withLock(visibleTo: self) { $0.events.append(event) }
        if let failure { throw failure }
    }

    /// Signs `store` out and records it.
    func signOut(_ store: any SessionStore) async {
        let t0 = TokenServer.realNanoseconds()
        let at = clock.now()
        await store.signOut()
        let event = SessionEvent(
            account: 0, kind: .signOut, startedNanos: t0, returnedNanos: TokenServer.realNanoseconds(), clockAt: at)
        recorded.withLock(visibleTo: self) { $0.events.append(event) }
    }

    /// Judges everything recorded, and the server calls made for it, into `oracle`; returns the
    /// lifecycle transitions it drove.
    /// `paced`: judge a store's own refusals like any error, with no excuse for a refresh rate
    /// limit on real time (``ContractJudge/paced``); `healthyServer`: the server had no faults and
    /// no transport (``ContractJudge/healthyServer``).
    /// `clockMoves`: the run moves the clock while calls are in flight
    /// (``ContractJudge/clockMovesDuringCalls``).
    func judge(
        skew: Duration, paced: Bool = false, healthyServer: Bool = false, clockMoves: Bool = false, into oracle: Oracle
    ) -> LifecycleCoverage {
        let (calls, events) = recorded.withLock(visibleTo: self) { ($0.calls, $0.events) }
        let timeline = SessionTimeline(events: events, entries: server.ledger.entries, issued: server.issuedTokens)
        var judge = ContractJudge(
            skew: skew, paced: paced, healthyServer: healthyServer, clockMovesDuringCalls: clockMoves)
        oracle.record(judge.findings(calls, timeline: timeline) + judge.serverCallFindings(timeline))
        var coverage = LifecycleCoverage()
        coverage.add(calls, timeline: timeline, skew: skew)
        return coverage
    }
}
