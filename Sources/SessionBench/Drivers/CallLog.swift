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
    /// Calls that are facts, not judged (``record(_:judged:)``).
    private let context = Mutex<[ObservedCall]>([])
    /// When the process died (`crash-restart`): a call under way then died with its caller.
    private let crashes = Mutex<[Int64]>([])
    /// The calls under way: when each began, by a number of its own (a few at a time: a list,
    /// cheaper than a dictionary to add to and take from for every call of every schedule).
    private let open = Mutex<(next: Int, began: [(number: Int, at: Int64)])>((0, []))
    /// Each account's users, by slot.
    let subjects: [[Subject]]
    let clock: TokenClock
    let server: TokenServer

    /// A log of one account, whose users are `users`.
    convenience init(users: [Subject], clock: TokenClock, server: TokenServer) {
        self.init(accounts: [users], clock: clock, server: server)
    }

    /// A log of several accounts, each with a store of its own: `accounts[k]` are account k's users.
    init(accounts: [[Subject]], clock: TokenClock, server: TokenServer) {
        subjects = accounts
        self.clock = clock
        self.server = server
    }

    /// The calls recorded so far, in the order they returned.
    var calls: [ObservedCall] { recorded.withLock(visibleTo: self) { $0.calls } }
    /// The sign-ins and sign-outs recorded so far, in the order they returned.
    var events: [SessionEvent] { recorded.withLock(visibleTo: self) { $0.events } }

    /// Makes `request` on `store` and records it; `cancelled`: the calling task is cancelled at some
    /// point (before, during or after the call), so a `cancelled` answer is its due.
    func call(
        _ request: StoreCall, on store: any SessionStore, account: Int = 0, caller: Int = -1,
        kind: OperationKind = .read, phase: String, cancelled: Bool = false
    ) async -> Result<AccessToken, SessionError> {
        let began = TokenServer.realNanoseconds()
        let number = open.withLock(visibleTo: self) { open in
            open.next += 1
            open.began.append((open.next, began))
            return open.next
        }
        let (call, token) = await request.perform(
            on: store, caller: caller, account: account, kind: kind, phase: phase, clock: clock, subjects: subjects,
            cancelled: cancelled)
        recorded.withLock(visibleTo: self) { $0.calls.append(call) }
        open.withLock(visibleTo: self) { open in
            if let index = open.began.firstIndex(where: { $0.number == number }) { open.began.remove(at: index) }
        }
        if let token { return .success(token) }
        return .failure(call.error ?? .signedOut)
    }

    /// The process died at `instant` (real nanoseconds): the calls under way then are not judged.
    func crashed(at instant: Int64) { crashes.withLock(visibleTo: self) { $0.append(instant) } }

    /// Records a call made elsewhere (a clinical request's failure that is its base token's);
    /// `judged: false`: a fact for the judge of the others, not judged itself.
    func record(_ call: ObservedCall, judged: Bool = true) {
        if judged {
            recorded.withLock(visibleTo: self) { $0.calls.append(call) }
        } else {
            context.withLock(visibleTo: self) { $0.append(call) }
        }
    }

    /// How many calls that began at or after `instant` (real nanoseconds) have not returned.
    func underWay(since instant: Int64) -> Int {
        open.withLock(visibleTo: self) { $0.began.count { $0.at >= instant } }
    }

    /// Signs `user` in on `store`, `account`'s, and records it.
    func signIn(_ user: Subject, on store: any SessionStore, account: Int = 0) async throws(SessionError) {
        let t0 = TokenServer.realNanoseconds()
        let at = clock.now()
        var failure: SessionError?
        do throws(SessionError) { try await store.signIn(Credentials(subject: user)) } catch { failure = error }
        let event = SessionEvent.signIn(
            account: account, slot: subjects[account].firstIndex(of: user) ?? 0, from: t0,
            to: TokenServer.realNanoseconds(), error: failure, clockAt: at, ledger: server.ledger,
            // With one account, the only sign-in under way is this one: no need to tell grants apart.
            subject: subjects.count > 1 ? user : nil, issued: subjects.count > 1 ? server.issuedTokens : [:])
        recorded.withLock(visibleTo: self) { $0.events.append(event) }
        if let failure { throw failure }
    }

    /// Signs `store`, `account`'s, out and records it.
    func signOut(_ store: any SessionStore, account: Int = 0) async {
        let t0 = TokenServer.realNanoseconds()
        let at = clock.now()
        await store.signOut()
        let event = SessionEvent(
            account: account, kind: .signOut, startedNanos: t0, returnedNanos: TokenServer.realNanoseconds(),
            clockAt: at)
        recorded.withLock(visibleTo: self) { $0.events.append(event) }
    }

    /// Judges everything recorded, and the server calls made for it, into `oracle`; returns the
    /// lifecycle transitions it drove.
    /// `paced`: judge a store's own refusals like any error, with no excuse for a refresh rate
    /// limit on real time (``ContractJudge/paced``); `healthyServer`: the server had no faults and
    /// no transport (``ContractJudge/healthyServer``).
    /// `clockMoves`: the run moves the clock while calls are in flight
    /// (``ContractJudge/clockMovesDuringCalls``).
    /// `storages`: each account's storage, for a store that keeps its session, judged as it
    /// stands now (nothing under way) with every write it saw (``ContractJudge/judgeStorage``).
    /// `controlled`: the calls ran on the controlled executor, each start its entry into the store
    /// (``ContractJudge/startsAreEntries``).
    func judge(
        skew: Duration, paced: Bool = false, healthyServer: Bool = false, clockMoves: Bool = false,
        storages: [MemoryStorage?] = [], controlled: Bool = false, into oracle: Oracle
    ) -> LifecycleCoverage {
        let crashes = self.crashes.withLock(visibleTo: self) { $0 }
        let (calls, events) = recorded.withLock(visibleTo: self) { ($0.calls, $0.events) }
        let timeline = SessionTimeline(events: events, entries: server.ledger.entries, issued: server.issuedTokens)
        var judge = ContractJudge(
            skew: skew, paced: paced, healthyServer: healthyServer, clockMovesDuringCalls: clockMoves,
            startsAreEntries: controlled)
        judge.restarts = crashes
        let context = self.context.withLock(visibleTo: self) { $0 }
        oracle.record(
            judge.findings(calls, context: context, timeline: timeline) + judge.serverCallFindings(timeline))
        let now = TokenServer.realNanoseconds()
        for (account, storage) in storages.enumerated() {
            guard let (saved, writes) = storage?.contents else { continue }
            var findings: [ContractJudge.Finding] = []
            judge.judgeStorage(
                saved: saved, writes: writes, account: account, calls: calls.filter { !judge.cut($0) },
                timeline: timeline, at: now
            ) { findings.append($0) }
            oracle.record(findings)
        }
        var coverage = LifecycleCoverage()
        coverage.add(calls, timeline: timeline, skew: skew)
        return coverage
    }
}
