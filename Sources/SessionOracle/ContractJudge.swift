import Foundation
import SessionContract
import TokenServer

/// Judges every call against the contract's model (``SessionTimeline``): a call belongs to the
/// session current when it started, and what it got — a token, an error, `nil` from the
/// synchronous read — must be one of the outcomes that session's events allow.
///
/// A token must be one the server issued, whole (I26); of the caller's account (I9) and of a
/// session not ended before the call started (I8, I9), nor refused by the server and said so to a
/// caller before it (I27); unexpired when returned, and, if the store already held it when the
/// call started, outside the refresh skew (I4); never older than a token of the same session
/// handed out before the call started (I5); and after a 401, newer than the token refused (I6).
/// `currentToken()` answers `nil` only when a session was not current, its token was due, or a
/// refresh was possibly under way (I12), and never a token while a refresh of it spans the whole
/// call (I4).
///
/// An error needs a cause in the call's own session, while the call was under way:
/// - `refreshFailed`: a refresh of that session failed in a way that may pass and was answered
///   while the call waited. None, but one failed earlier: the store replays an old failure (I10,
///   sticky). None at all: the store gave up without asking the server (I12). The server refused
///   the session by then: the session is over, and it will not pass (I12).
/// - `refreshTokenRevoked`: the server refused that session's refresh token before the call
///   returned; otherwise the store ended the session on its own (I13).
/// - `signedOut`: no session was current when the call started, or a sign-in or sign-out ran
///   while it waited, or the server had refused the session by the time it returned; otherwise
///   I13. Told after a refusal, it says the store knew the session was over, as
///   `refreshTokenRevoked` does (I27).
/// - `cancelled`: only for a caller the harness cancelled (I11).
/// - anything else from a token request: I12.
package struct ContractJudge {
    /// One broken promise: which, in one line, and the few events behind it.
    package struct Finding: Sendable {
        package let invariant: Invariant
        package let summary: String
        package let trace: [String]

        package init(invariant: Invariant, summary: String, trace: [String] = []) {
            self.invariant = invariant
            self.summary = summary
            self.trace = trace
        }
    }

    /// How close to expiry a token the store already held may be when handed out.
    package let skew: Duration
    /// Whether the run spaces its rounds in real time (`--pace`): then a refusal of the store's
    /// own is judged like any other error.
    package let paced: Bool
    /// Whether the server was healthy for the whole run (no faults, no transport between it and the
    /// store): then a `signInFailed` with no refusal behind it is the store's own doing.
    package let healthyServer: Bool
    /// Calls the store refused on its own, with no failed refresh behind them, right after it had
    /// sent three refreshes or more in the last ``limitWindow`` of real time: a refresh rate limit
    /// on real time meeting the rounds' compressed time. Reported apart, not judged.
    package private(set) var refusedByStoreLimit: [ObservedCall] = []
    /// How far back a store's recent refreshes count toward its own rate limit.
    package static let limitWindow: Int64 = 30_000_000_000
    /// The highest generation of each session handed out, over time.
    package private(set) var watermark = Watermark()
    /// When a call of each session first returned `refreshTokenRevoked`, or `signedOut` once the
    /// server had refused the session: the store knew.
    package private(set) var revokedTold: [UInt64: Int64] = [:]
    /// When the store's process died and a new one was made over its storage (`explore`'s
    /// crash): what the old process knew died with it, so a refusal it heard binds none after.
    package var restarts: [Int64] = []
    /// When each `tokenRejected` of a generation ran (real nanoseconds, start and return). While
    /// one runs, the store may have a refresh of it under way that the server has not seen yet:
    /// the request is on its way (over a socket, or on a thread the machine has not run yet), and
    /// the caller waits for it. Once every one has returned, that refresh was answered or failed.
    /// A 401 whose caller was cancelled may return before the refresh it started does (the store
    /// carries on for others, or on its own): `cancelled` marks those.
    package private(set) var rejections: [UInt64: [(started: Int64, ended: Int64, cancelled: Bool)]] = [:]
    /// When each generation was first handed out (real nanoseconds).
    package private(set) var firstHandedOut: [UInt64: Int64] = [:]
    /// Storage writes already judged, by account.
    package var writesJudged: [Int: Int] = [:]
    /// Sign-ins and sign-outs whose clearing of the storage was already judged, by account.
    package var endsJudged: [Int: Int] = [:]

    /// Whether the run moves the store's clock while calls are in flight (a generated program's
    /// expiry, made by one caller while the others call): a call then owes a token unexpired at
    /// its start, the last instant the store could know the clock would not move before it returned.
    package let clockMovesDuringCalls: Bool

    /// Whether a call's recorded start is its entry into the store: on the controlled executor
    /// (`explore`) the step that reads the start runs on into the store, with no other step
    /// between. In real time the thread may be preempted between the two for as long as the
    /// machine likes, so what the store did with a call cannot be dated by its start alone.
    package let startsAreEntries: Bool

    package init(
        skew: Duration, paced: Bool = false, healthyServer: Bool = false, clockMovesDuringCalls: Bool = false,
        startsAreEntries: Bool = false
    ) {
        self.skew = skew
        self.paced = paced
        self.healthyServer = healthyServer
        self.clockMovesDuringCalls = clockMovesDuringCalls
        self.startsAreEntries = startsAreEntries
    }

    /// Judges `calls` (any order; earlier batches stay known), reporting each finding. `context`:
    /// calls that are facts but are not judged themselves — a step-up's waiters, whose base-token
    /// failure the model of step-up judges: while one of them has not returned a refresh's
    /// failure, the store is still handing it out.
    package mutating func judge(
        _ calls: [ObservedCall], context: [ObservedCall] = [], timeline: SessionTimeline, report: (Finding) -> Void
    ) {
        // A call a restart cut died with its caller: what it got reached nobody, and it is not
        // judged; it is still a fact (a 401 it made was under way).
        let (all, calls) = (calls + context, calls.filter { !cut($0) })
        for call in all where cut(call) {
            guard case .tokenRejected(let generation) = call.request else { continue }
            rejections[generation, default: []].append((call.startedNanos, call.endedNanos, call.wasCancelled))
        }
        refusedByStoreLimit += calls.filter { isStoreLimitRefusal($0, timeline) }
        watermark.add(
            calls.compactMap { call in
                call.token.flatMap { token in timeline.issued[token.generation].map { (call, $0.family) } }
            })
        for call in calls {
            if let generation = call.token?.generation {
                firstHandedOut[generation] = min(firstHandedOut[generation] ?? .max, call.endedNanos)
            }
            guard case .tokenRejected(let generation) = call.request else { continue }
            rejections[generation, default: []].append(
                (call.startedNanos, call.endedNanos, call.wasCancelled && call.error == .cancelled))
        }
        // Told the session is over because the server refused it: 'refresh token revoked', or
        // 'signed out' by the end of a call whose session the server had refused (ErrorRule).
        for call in calls {
            guard call.error == .refreshTokenRevoked || call.error == .signedOut else { continue }
            for family in timeline.current(account: call.account, at: call.startedNanos).families
            where timeline.sessions[family]?.refusedAt.map({ $0 <= call.endedNanos }) == true {
                revokedTold[family] = min(revokedTold[family] ?? .max, call.endedNanos)
            }
        }
        let facts = Facts(timeline: timeline, calls: calls + context)
        for call in calls {
            if let finding = judge(call, facts) { report(finding) }
        }
    }

    /// The server calls no caller asked for: a sign-in the harness did not make (I13), and
    /// refreshes of a session after its end (I8, I9) or after the store said the server refused
    /// it (I27).
    /// Whether a restart came while `call` was under way.
    package func cut(_ call: ObservedCall) -> Bool { restarted(after: call.startedNanos, by: call.endedNanos) }

    /// Whether the store's process was restarted between `start` and `end`.
    func restarted(after start: Int64, by end: Int64) -> Bool { restarts.contains { $0 > start && $0 < end } }

    package func judgeServerCalls(_ timeline: SessionTimeline, report: (Finding) -> Void) {
        let signIns = timeline.events.values.flatMap { $0 }.filter(\.isSignIn)
        for event in signIns.sorted(by: { $0.startedNanos < $1.startedNanos }) {
            if let finding = judgeSignIn(event, timeline) { report(finding) }
        }
        if let own = timeline.entries.first(where: { entry in
            entry.call == .signIn && entry.principal == nil
                && !signIns.contains { entry.sentAt >= $0.startedNanos && entry.sentAt <= $0.returnedNanos }
        }) {
            report(
                Finding(
                    invariant: .sessionKept,
                    summary: "the store signed in on its own: the user did not ask for a session",
                    trace: ["no signIn() call was under way when the server got " + Oracle.describe(own)]))
        }
        for session in timeline.sessions.values.sorted(by: { $0.family < $1.family }) {
            let refreshes = timeline.refreshes(of: session.family)
            if let ended = session.ended {
                // A refresh sent after the fence returned was decided after it, but for one the
                // store may have decided before (its task was slow to send it): one presenting the
                // token the session held at the fence (a grant expired on arrival is held too).
                let atFence = timeline.newestHeld(family: session.family, by: ended.returnedNanos)
                let late = refreshes.filter { $0.sentAt > ended.returnedNanos }
                let excused = late.first { $0.presentedGeneration == atFence }?.index
                if let first = late.first(where: { $0.index != excused }) {
                    let switched = isSwitch(ended, from: session)
                    report(
                        Finding(
                            invariant: switched ? .noCrossUserLeak : .signOutFence,
                            summary:
                                "\(late.count) refresh call(s) of a session after \(switched ? "another user's sign-in" : ended.isSignIn ? "a new sign-in" : "its sign-out") returned: something kept the ended session alive",
                            trace: [
                                "family \(session.family) ended when the \(ended.isSignIn ? "sign-in" : "sign-out") returned at \(relative(ended.returnedNanos, timeline))",
                                "then: " + Oracle.describe(first),
                            ]))
                }
            }
            // After the server refused the session (and surely once a caller was told), nothing
            // refreshes it: a refresh decided before the refusal arrived overlapped the refused one.
            let over = min(revokedTold[session.family] ?? .max, session.refusedAt ?? .max)
            if over < .max,
                let late = refreshes.first(where: { $0.sentAt > over && !restarted(after: over, by: $0.sentAt) })
            {
                report(
                    Finding(
                        invariant: .revocationFinal,
                        summary:
                            "a refresh of a session the server had refused: the session is over until the next sign-in",
                        trace: [
                            "the refusal was answered at \(relative(over, timeline))"
                                + (session.refusedAt.flatMap { at in
                                    refreshes.first { $0.respondedAt == at }.map { ": " + Oracle.describe($0) }
                                } ?? ""),
                            "then: " + Oracle.describe(late),
                        ]))
            }
        }
    }

    /// What a `signIn` returned, against what the server answered it: success for a grant,
    /// `signInFailed` for a refusal, `signedOut` only when another sign-in or sign-out overtook it.
    private func judgeSignIn(_ event: SessionEvent, _ timeline: SessionTimeline) -> Finding? {
        let asked = timeline.entries.filter {
            $0.call == .signIn && $0.principal == nil && $0.sentAt >= event.startedNanos
                && $0.sentAt <= event.returnedNanos
        }
        let granted = asked.contains { $0.issuedGeneration != nil }
        let refused = asked.contains { $0.issuedGeneration == nil }
        let overtaken = timeline.events(of: event.account).contains {
            $0.startedNanos > event.startedNanos && $0.startedNanos < event.returnedNanos
        }
        // Described only for a finding: most sign-ins have none.
        var trace: [String] { asked.prefix(3).map { "the server got " + Oracle.describe($0) } }
        switch event.error {
        case nil:
            guard !granted, refused else { return nil }
            return Finding(
                invariant: .served, summary: "a sign-in the server refused returned as if it had succeeded",
                trace: trace)
        case .signInFailed? where refused || overtaken:
            return nil
        case .signInFailed?:
            if granted {
                return Finding(
                    invariant: .served,
                    summary: "a sign-in failed with 'sign-in failed' though the server granted a session", trace: trace)
            }
            guard healthyServer else { return nil }
            return Finding(
                invariant: .served,
                summary: "a sign-in failed with 'sign-in failed' against a healthy server that refused nothing",
                trace: trace.isEmpty ? ["the server got no sign-in call during it"] : trace)
        case .signedOut? where overtaken:
            return nil
        case let error?:
            return Finding(
                invariant: .served,
                summary:
                    "a sign-in threw '\(error)'; the contract's answers are success, 'sign-in failed' for a refusal, or 'signed out' when overtaken",
                trace: trace)
        }
    }

    // MARK: One call

    private struct Facts {
        package let timeline: SessionTimeline
        /// Every call judged, for the rules that look at a call's neighbours.
        package let calls: [ObservedCall]
    }

    private func judge(_ call: ObservedCall, _ facts: Facts) -> Finding? {
        let timeline = facts.timeline
        let who = call.who
        switch call.answer {
        case .token(let token):
            return judgeToken(token, call: call, who: who, timeline)
        case .none:
            return judgeNil(call, who: who, timeline)
        case .error(let error):
            // A cancelled caller may get any error: its wait, or its own request, was cut short.
            if call.wasCancelled { return nil }
            return judgeError(error, call: call, who: who, timeline, calls: facts.calls)
        }
    }

    private func judgeToken(
        _ token: ObservedCall.Issued, call: ObservedCall, who: String, _ timeline: SessionTimeline
    ) -> Finding? {
        let what = call.isSyncRead ? "currentToken()" : "the call"
        // I26: one the server issued, whole.
        guard let record = timeline.issued[token.generation] else {
            return Finding(
                invariant: .genuine,
                summary: "\(who) got a token of generation \(token.generation), which the server never issued",
                trace: ["the server issued generations up to \(timeline.issued.keys.max() ?? 0)"])
        }
        let session = timeline.sessions[record.family]
        // A store may count a token as expiring sooner than it does; later misleads its callers.
        if record.fingerprint != token.fingerprint || record.expiresAt < token.expiresAt
            || (session.map { token.account != $0.account || token.subjectSlot != $0.slot } ?? false)
        {
            var differences: [String] = []
            if record.fingerprint != token.fingerprint {
                differences.append("its value is not generation \(token.generation)'s")
            }
            if record.expiresAt < token.expiresAt {
                differences.append(
                    "it claims to expire at \(token.expiresAt.nanoseconds)ns; the server issued it to expire at \(record.expiresAt.nanoseconds)ns"
                )
            }
            if let session, token.account != session.account || token.subjectSlot != session.slot {
                differences.append("it names another user than the one generation \(token.generation) was issued to")
            }
            return Finding(
                invariant: .genuine,
                summary: "\(who) got a token that is not the one the server issued as generation \(token.generation)",
                trace: differences + issuance(of: token.generation, timeline))
        }
        // I9: the caller's own account.
        guard let session, session.account == call.account else {
            return Finding(
                invariant: .noCrossUserLeak, summary: "\(who) of account \(call.account) got another account's token",
                trace: [
                    "the caller asked account \(call.account)'s store; generation \(token.generation) belongs to "
                        + (session.map { "account \($0.account)" } ?? "no account of this run")
                ] + issuance(of: token.generation, timeline))
        }
        // I8, I9: a session not ended before the call started.
        if let ended = session.ended, call.startedNanos > ended.returnedNanos {
            let switched = isSwitch(ended, from: session)
            let refused = ended.isSignIn && ended.family == nil ? "refused " : ""
            let how =
                ended.isSignIn
                ? (switched ? "another user's \(refused)sign-in" : "a new \(refused)sign-in") : "the sign-out"
            return Finding(
                invariant: switched ? .noCrossUserLeak : .signOutFence,
                summary:
                    "\(who) started after \(how) returned and got generation \(token.generation) of the ended session",
                trace: [
                    "family \(session.family) ended: \(how) returned at \(relative(ended.returnedNanos, timeline))",
                    "\(what) started at \(relative(call.startedNanos, timeline)) and returned generation \(token.generation) (family \(session.family))",
                ] + issuance(of: token.generation, timeline))
        }
        // I8, I9: the session current when the call started, not one a sign-in began later —
        // of that session, not merely of that account.
        if let finding = judgeLaterSession(token, session: session, call: call, who: who, timeline) { return finding }
        // I27: a session the store had said the server refused.
        if let told = revokedTold[session.family], call.startedNanos > told,
            !restarted(after: told, by: call.startedNanos)
        {
            return Finding(
                invariant: .revocationFinal,
                summary:
                    "\(who) got generation \(token.generation) of a session the store had already said the server refused",
                trace: [
                    "a call of family \(session.family) returned 'refresh token revoked' at \(relative(told, timeline))",
                    "\(what) started at \(relative(call.startedNanos, timeline)) and returned generation \(token.generation)",
                ]
                    + (session.refusedAt.map { at in
                        timeline.refreshes(of: session.family).first { $0.respondedAt == at }.map {
                            ["refused by " + Oracle.describe($0)]
                        } ?? []
                    } ?? []))
        }
        // I4: unexpired when returned; a token held before the call, outside the skew. (Not for the
        // waiters of a refresh whose token arrived expired: the store had no fresh one to give
        // them; what it owes then is to keep the rotated refresh token, which the ledger judges.
        // Where the clock jumps while calls run, unexpired when the call started.)
        let owedUntil = clockMovesDuringCalls ? call.startedAt : call.endedAt
        let delivered = timeline.deliveredAt[token.generation] ?? .max
        let heldBefore = delivered < call.startedNanos
        // Where the clock jumps, it may jump between a refresh's answer and the store taking it in
        // (its task not yet resumed): a refreshed token nobody had been handed before this call is
        // one the store may have only now received, and judged like a token that arrived expired.
        let takenInLate =
            clockMovesDuringCalls && heldBefore && (firstHandedOut[token.generation] ?? .max) >= call.startedNanos
            && timeline.entries.contains { $0.call == .refresh && $0.issuedGeneration == token.generation }
        // Inside the skew, not on its edge: whether a token exactly `skew` from expiry is due is
        // the store's to decide (`expires - now > skew` and `>=` are both in use).
        if !takenInLate, heldBefore || !timeline.expiredOnArrival.contains(token.generation),
            record.expiresAt <= owedUntil || (heldBefore && record.expiresAt < call.startedAt + skew)
        {
            let expired = record.expiresAt <= call.startedAt
            return Finding(
                invariant: .fresh,
                summary: expired
                    ? "\(who) got generation \(token.generation), already expired when it asked"
                    : record.expiresAt <= owedUntil
                        ? "\(who) got generation \(token.generation), expired when returned"
                        : "\(who) got generation \(token.generation), due for refresh: within the refresh skew of expiry",
                trace: [
                    "the token expires at \(record.expiresAt.nanoseconds)ns on the store's clock; \(what) ran from \(call.startedAt.nanoseconds)ns to \(call.endedAt.nanoseconds)ns; refresh skew \(skew.secondsValue.formatted()) s"
                ] + issuance(of: token.generation, timeline))
        }
        // I5: never older than a token of the same session already handed out.
        if let seen = watermark.highest(family: session.family, endedBefore: call.startedNanos),
            token.generation < seen.generation
        {
            return Finding(
                invariant: .monotonic,
                summary:
                    "\(who) got generation \(token.generation) after generation \(seen.generation) of the same session had been handed out",
                trace: [
                    "\(seen.phase): caller \(seen.caller) got generation \(seen.generation) and returned before the later call started",
                    "\(call.who) then got the older generation \(token.generation)",
                ])
        }
        // I6: a 401 brings a newer token than the one refused.
        if case .tokenRejected(let rejected) = call.request, timeline.issued[rejected]?.family == session.family,
            token.generation <= rejected
        {
            return Finding(
                invariant: .staleRejectionDoesNotRefresh,
                summary:
                    "\(who) reported a 401 for generation \(rejected) and got generation \(token.generation) back: the request would fail again",
                trace: ["no newer token came back for the refused one"] + issuance(of: token.generation, timeline))
        }
        // I4: the synchronous read promises no token while the token is being replaced.
        if call.isSyncRead,
            let refresh = timeline.refreshSpans(family: session.family, call.startedNanos, call.endedNanos),
            (refresh.presentedGeneration ?? 0) >= token.generation
        {
            return Finding(
                invariant: .fresh,
                summary:
                    "\(who): currentToken() returned generation \(token.generation) while a refresh of it was under way",
                trace: [
                    "a refresh of family \(session.family) was in flight for the whole call: "
                        + Oracle.describe(refresh)
                ])
        }
        return nil
    }

    // MARK: Helpers

    /// A `refreshFailed` with no failed refresh answered during the call, from a store that had
    /// sent three refreshes or more (of any of its account's sessions, whatever their answers) in
    /// the real time just before: its own rate limit, as real ones count attempts (Alamofire's
    /// `RefreshWindow`: 5 in 30 s). A store that gives up refreshes nothing first, and one that
    /// replays its first failure does so after one or two: those stay judged (I12, I10). A paced
    /// run excuses nothing.
    package func isStoreLimitRefusal(_ call: ObservedCall, _ timeline: SessionTimeline) -> Bool {
        guard !paced, call.error == .refreshFailed, !call.wasCancelled else { return false }
        let refreshes = timeline.sessions.values.filter { $0.account == call.account }
            .flatMap { timeline.refreshes(of: $0.family) }
        guard !refreshes.contains(where: { $0.isPassingFailure && answered($0, within: call) }) else { return false }
        return refreshes.count {
            $0.sentAt <= call.startedNanos && $0.sentAt >= call.startedNanos - Self.limitWindow
        } >= 3
    }

    package func isSwitch(_ ended: SessionEvent, from session: SessionTimeline.Session) -> Bool {
        if case .signIn(let slot, _) = ended.kind { return slot != session.slot }
        return false
    }

    package func answered(_ entry: LedgerEntry, within call: ObservedCall) -> Bool {
        guard let responded = entry.respondedAt else { return false }
        return responded >= call.startedNanos && responded <= call.endedNanos
    }

    /// `+1.250ms` after the run's first server call, `-0.008ms` before it.
    package func relative(_ nanos: Int64, _ timeline: SessionTimeline) -> String {
        String(format: "%+.3fms", Double(nanos - (timeline.entries.first?.sentAt ?? 0)) / 1e6)
    }

    package func issuance(of generation: UInt64, _ timeline: SessionTimeline) -> [String] {
        timeline.entries.first { $0.issuedGeneration == generation }.map { ["issued by " + Oracle.describe($0)] } ?? []
    }

    package func attemptsTrace(_ refreshes: [LedgerEntry], during call: ObservedCall, _ timeline: SessionTimeline)
        -> [String]
    {
        let window = refreshes.filter {
            ($0.respondedAt ?? .max) >= call.startedNanos - 1_000_000_000 && $0.sentAt <= call.endedNanos
        }
        let head =
            "the call ran from \(relative(call.startedNanos, timeline)) to \(relative(call.endedNanos, timeline))"
        if window.isEmpty { return [head, "no refresh of its session reached the server around it"] }
        return [head] + window.suffix(3).map { "around it: " + Oracle.describe($0) }
    }
}
