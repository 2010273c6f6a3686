import SessionContract
import TokenServer

/// One `elevatedToken()` call of an API object, as a schedule of `explore --scenario step-up`
/// saw it: who made it, when it started and returned (real monotonic nanoseconds, the clock of
/// the ledger and of the sign-ins), the store's clock when it started, and what it got. No token
/// values.
package struct ElevationRecord: Sendable {
    package enum Answer: Sendable {
        /// An elevated token: its generation, the access token's it was bought with, its expiry.
        case elevated(generation: UInt64, baseGeneration: UInt64, expiresAt: TokenInstant)
        case error(SessionError)
    }

    package let caller: Int
    package let phase: String
    package let startedNanos: Int64
    package let endedNanos: Int64
    package let startedAt: TokenInstant
    package let endedAt: TokenInstant
    package let answer: Answer
    /// The calling task was cancelled at some point (before, during or after the call).
    package let wasCancelled: Bool

    package init(
        caller: Int, phase: String, startedNanos: Int64, endedNanos: Int64, startedAt: TokenInstant,
        endedAt: TokenInstant, answer: Answer, wasCancelled: Bool
    ) {
        self.caller = caller
        self.phase = phase
        self.startedNanos = startedNanos
        self.endedNanos = endedNanos
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.answer = answer
        self.wasCancelled = wasCancelled
    }

    package var who: String { "\(phase): caller \(caller)" }

    /// A failure that is not a step-up's own, as the `validToken()` whose answer it passed on:
    /// the contract's model judges a `signedOut` or `cancelled` by it; a refresh's failure the
    /// model of step-up judges (a request may share a step-up that asked for its base token before
    /// it began), and the read is only a fact for the others (a waiter of that refresh).
    package var asRead: ObservedCall? {
        guard case .error(let error) = answer, !error.isStepUp else { return nil }
        return ObservedCall(
            caller: caller, account: 0, kind: .read, request: .validToken, phase: phase, startedAt: startedAt,
            endedAt: endedAt, startedNanos: startedNanos, endedNanos: endedNanos, answer: .error(error),
            wasCancelled: wasCancelled)
    }
}

/// A step-up prompt the exploring user was shown: for which of the account's users, when it
/// appeared and when it was answered, and how. A patient user answers only once every other
/// task has run as far as it can; `stuck` counts the token reads and 401s that began while it was
/// open and were still waiting then, with no server call under way: waiting on the prompt.
package struct PromptRecord: Sendable {
    package let index: Int
    /// Which of the account's users was prompted (`nil`: none of them).
    package let slot: Int?
    package let phase: String
    package let shownNanos: Int64
    /// The store's clock when it appeared.
    package let shownAt: TokenInstant
    package var answeredNanos: Int64?
    package var answer: SimulatedUser.Prompt.Answer?
    package let patient: Bool
    package var stuck = 0
    /// A patient user answered once every other task had run as far as it could with no server
    /// call under way: a clinical request still under way then could only be waiting on it.
    package var settled = false

    package init(index: Int, slot: Int?, phase: String, shownNanos: Int64, shownAt: TokenInstant, patient: Bool) {
        self.index = index
        self.slot = slot
        self.phase = phase
        self.shownNanos = shownNanos
        self.shownAt = shownAt
        self.patient = patient
    }

    /// Open from when it appeared until it was answered (for ever, if it never was).
    package var closedNanos: Int64 { answeredNanos ?? .max }
}

/// The promises of ``SessionClient/elevatedToken()`` judged from what callers got, the prompts
/// the user saw, the sign-ins and sign-outs, and the ledger — no store internals, and no
/// assumption of when a call joined a prompt:
/// - an elevated token handed out was bought in a session that was signed in at some moment of
///   the call, and was unexpired when the call began (I20, I4);
/// - a denial or a dismissal reaches only calls that may have waited on a prompt answered so —
///   answered before the call returned, its outcome handed to no caller before the call began (I19); a
///   call whose task was not cancelled is never told `cancelled`, and one that was is never told
///   the user's answer that nobody gave (I11);
/// - `stepUpFailed` only when the server refused an elevation during the call (its access token
///   expired while the user answered) or sold one that expired before the call returned, or the
///   session ended; a refresh's failure only once a refresh of the call's session had failed;
///   `signedOut` and `cancelled` are the base token's, judged as a `validToken()` of the same
///   interval (``ElevationRecord/asRead``);
/// - one prompt at a time for a session (I18), and none while an elevated token of the session,
///   handed out before every call then under way began, was still fresh for half its lifetime;
///   a prompt for a user who had no request at all is I22;
/// - every clinical request under way when a settled patient prompt was answered (nothing else
///   could run, no server call under way) gets its outcome (I19);
/// - a patient prompt's `stuck` reads (I21), and no elevation for a session after the sign-out
///   that ended it returned (I22).
package enum StepUpModelJudge {
    package typealias Finding = ContractJudge.Finding

    package static func judge(
        elevations: [ElevationRecord], prompts: [PromptRecord], timeline: SessionTimeline, lifetime: Duration,
        account: Int = 0
    ) -> [Finding] {
        var model = Model(
            timeline: timeline, account: account, lifetime: lifetime, prompts: prompts, elevations: elevations)
        for call in elevations.sorted(by: { $0.startedNanos < $1.startedNanos }) { model.judge(call) }
        model.judgePrompts()
        model.judgeElevations()
        return model.findings
    }

    struct Model {
        let timeline: SessionTimeline
        let account: Int
        let lifetime: Duration
        let prompts: [PromptRecord]
        let elevations: [ElevationRecord]
        /// The server's elevations, by the generation each issued.
        let bought: [UInt64: LedgerEntry]
        var findings: [Finding] = []

        init(
            timeline: SessionTimeline, account: Int, lifetime: Duration, prompts: [PromptRecord],
            elevations: [ElevationRecord]
        ) {
            self.timeline = timeline
            self.elevations = elevations
            self.account = account
            self.lifetime = lifetime
            self.prompts = prompts
            var bought: [UInt64: LedgerEntry] = [:]
            for entry in timeline.entries where entry.call == .elevate {
                if let generation = entry.issuedGeneration { bought[generation] = entry }
            }
            self.bought = bought
        }

        mutating func report(_ invariant: Invariant, _ summary: String, trace: [String] = []) {
            findings.append(Finding(invariant: invariant, summary: summary, trace: trace))
        }

        /// The sessions alive at some moment of `[start, end]`: from their sign-in's start until
        /// the event that ended them returned.
        func sessions(_ start: Int64, _ end: Int64) -> [SessionTimeline.Session] {
            timeline.sessions.values.filter {
                $0.account == account && $0.began.startedNanos <= end && ($0.ended?.returnedNanos ?? .max) >= start
            }
        }

        /// Whether some moment of `[start, end]` had no session: signed out, a fence under way, a
        /// session the server had refused.
        func noSessionPossible(_ start: Int64, _ end: Int64) -> Bool {
            if timeline.current(account: account, at: start).noneAllowed { return true }
            if timeline.eventOverlaps(account: account, start, end) != nil { return true }
            return sessions(start, end).contains { ($0.refusedAt ?? .max) <= end }
        }

        // MARK: Calls

        mutating func judge(_ call: ElevationRecord) {
            switch call.answer {
            case .elevated(let generation, let base, let expiresAt):
                elevated(call, generation: generation, base: base, expiresAt: expiresAt)
            case .error(let error):
                failed(call, error)
            }
        }

        mutating func elevated(_ call: ElevationRecord, generation: UInt64, base: UInt64, expiresAt: TokenInstant) {
            let what = "elevated token e\(generation) (bought with g\(base))"
            guard let entry = bought[generation] else {
                report(
                    .elevationEndsWithSession, "an elevated token the server never issued was handed out (\(call.who))",
                    trace: [what])
                return
            }
            let alive = sessions(call.startedNanos, call.endedNanos).map(\.family)
            if !alive.contains(entry.family) {
                let ended = timeline.sessions[entry.family]?.ended.map { $0.returnedNanos < call.startedNanos } ?? false
                report(
                    .elevationEndsWithSession,
                    "an elevated token bought in \(ended ? "a session that had ended" : "another session") was handed out (\(call.who))",
                    trace: [
                        "\(what) of family \(entry.family); the sessions of the call: "
                            + (alive.isEmpty ? "none" : alive.map { "family \($0)" }.joined(separator: ", "))
                    ])
            } else if expiresAt <= call.startedAt {
                report(
                    .fresh, "an expired elevated token was handed out (\(call.who))",
                    trace: ["\(what) expired before the call began"])
            }
        }

        /// A step-up's own failures; any other (`signedOut`, `cancelled`, a refresh's) is the base
        /// token's, judged with the token reads as a `validToken()` of the same interval.
        mutating func failed(_ call: ElevationRecord, _ error: SessionError) {
            switch error {
            case .stepUpDenied, .stepUpDismissed:
                let answer: SimulatedUser.Prompt.Answer = error == .stepUpDenied ? .denied : .dismissed
                guard !owed(answer, to: call) else { return }
                let given = prompts.contains { $0.answer == answer && ($0.answeredNanos ?? .max) < call.startedNanos }
                if call.wasCancelled, !given {
                    report(
                        .cancellationIsolated,
                        "a clinical request cancelled while it waited got '\(error)', an answer the user never gave (\(call.who))",
                        trace: ["no prompt was answered '\(answer.rawValue)' while the call ran"])
                } else {
                    report(
                        .stepUpSharedNotSticky,
                        "a clinical request failed with '\(error)' with no prompt answered so while it ran: an earlier answer was kept (\(call.who))",
                        trace: answers(before: call.startedNanos))
                }
            case .stepUpFailed:
                // The server refused an elevation for an expired or ended session, or sold one
                // that had expired by the time the call returned (the clock moved meanwhile).
                let excused = timeline.entries.contains {
                    guard $0.call == .elevate, $0.sentAt <= call.endedNanos,
                        joined(call, since: $0.respondedAt ?? .max)
                    else { return false }
                    return $0.outcome == .issued ? $0.at + lifetime <= call.endedAt : $0.outcome != .unknownToken
                }
                guard !excused, !noSessionPossible(call.startedNanos, call.endedNanos) else { return }
                report(
                    .served, "a clinical request of a signed-in user failed with '\(error)' (\(call.who))",
                    trace: [
                        "no elevation during the call was refused for an expired or ended session, or expired before it returned"
                    ])
            case .signedOut, .cancelled:
                break  // judged as a read (``ElevationRecord/asRead``)
            default:
                // A refresh's failure, passed on: some refresh of the call's session failed (or
                // brought a token already expired) before it returned. A step-up under way may
                // have asked for its base token before this request began and shares its outcome.
                let families = Set(sessions(call.startedNanos, call.endedNanos).map(\.family))
                let failed = timeline.entries.contains {
                    $0.call == .refresh && families.contains($0.family) && !$0.deliveredGrant
                        && ($0.respondedAt ?? .max) <= call.endedNanos
                }
                guard !failed, !noSessionPossible(call.startedNanos, call.endedNanos) else { return }
                report(
                    .served, "a clinical request of a signed-in user failed with '\(error)' (\(call.who))",
                    trace: ["no refresh of its session had failed when it returned"])
            }
        }

        /// Whether `call` may have waited on a prompt answered `answer`: one answered before it
        /// returned, whose outcome had reached no caller yet when it began (a request that joins
        /// a step-up after the user answered, before the answer is handed out, shares it).
        func owed(_ answer: SimulatedUser.Prompt.Answer, to call: ElevationRecord) -> Bool {
            prompts.contains { prompt in
                guard prompt.answer == answer, let answered = prompt.answeredNanos, answered <= call.endedNanos
                else { return false }
                return joined(call, since: answered)
            }
        }

        /// Whether `call` may have shared an outcome decided at `decided`: it was under way then,
        /// or began before every clinical request under way then had returned (the store had
        /// not handed the outcome to all its waiters yet — an actor resumes them one at a time —
        /// and a request that came meanwhile may join them).
        func joined(_ call: ElevationRecord, since decided: Int64) -> Bool {
            if call.startedNanos <= decided { return call.endedNanos >= decided }
            return elevations.contains { $0.startedNanos <= decided && $0.endedNanos >= call.startedNanos }
        }

        /// The prompts answered before `instant`, for a trace.
        func answers(before instant: Int64) -> [String] {
            let earlier = prompts.filter { ($0.answeredNanos ?? .max) < instant }.suffix(3)
            return earlier.map { "earlier: prompt #\($0.index) (\($0.phase)) answered \($0.answer?.rawValue ?? "-")" }
        }

        // MARK: Prompts

        /// Whether a sign-in or sign-out of the account was under way at some moment of `[start, end]`.
        func fenceOverlaps(_ start: Int64, _ end: Int64) -> Bool {
            timeline.eventOverlaps(account: account, start, end) != nil
        }

        mutating func judgePrompts() {
            let ordered = prompts.sorted { $0.shownNanos < $1.shownNanos }
            for (position, prompt) in ordered.enumerated() {
                // One prompt at a time for a session: a second while the first was open.
                if let open = ordered.prefix(position).first(where: {
                    $0.slot == prompt.slot && $0.closedNanos > prompt.shownNanos
                        && !fenceOverlaps($0.shownNanos, prompt.shownNanos)
                }) {
                    report(
                        .promptSingleFlight,
                        "prompt #\(prompt.index) appeared while prompt #\(open.index) of the same session was still open (\(prompt.phase))",
                        trace: [
                            "prompt #\(open.index) shown in \(open.phase), answered "
                                + (open.answer?.rawValue ?? "never"),
                            "concurrent requests share one prompt, of every API object",
                        ])
                }
                fresh(prompt)
                // A prompt for a user none of whose sessions had a request.
                let asked = elevations.contains { call in
                    call.startedNanos <= prompt.shownNanos
                        && sessions(call.startedNanos, max(call.endedNanos, prompt.shownNanos)).contains {
                            $0.slot == prompt.slot
                        }
                }
                if !asked {
                    report(
                        .clientFollowsSession,
                        "the user was prompted with no request made in a session of theirs (\(prompt.phase))",
                        trace: ["prompt #\(prompt.index)"])
                }
                if prompt.settled { waiters(of: prompt) }
                if prompt.stuck > 0 {
                    report(
                        .stepUpIndependent,
                        "\(prompt.stuck) token read(s) or 401(s) made while prompt #\(prompt.index) was open did not return until it was answered (\(prompt.phase))",
                        trace: [
                            "the user waited until every other task had run as far as it could, with no server call under way",
                            "the session's own token needs no prompt",
                        ])
                }
            }
        }

        /// The waiters of a settled prompt (``PromptRecord/settled``): every clinical request
        /// under way when it was answered, not cancelled, with no sign-in or sign-out across it,
        /// while no other prompt was open, could only be waiting on it, and gets its outcome — a
        /// denial or a dismissal as it was given, an approval never as a refusal, and never as
        /// the outcome of a prompt shown after it (I19).
        mutating func waiters(of prompt: PromptRecord) {
            guard let answered = prompt.answeredNanos, let answer = prompt.answer,
                !prompts.contains(where: {
                    $0.index != prompt.index && $0.shownNanos < answered && $0.closedNanos > answered
                })
            else { return }
            let owed = StepUpJudge.owed(answer)
            for call in elevations
            where call.startedNanos < answered && call.endedNanos > answered && !call.wasCancelled
                && !fenceOverlaps(call.startedNanos, call.endedNanos)
            {
                let got: String
                switch call.answer {
                case .error(let error) where error.isStepUp && error != owed && (owed != nil || error != .stepUpFailed):
                    // (An approval's elevation may still fail: `step-up failed` is judged above.)
                    got = "'\(error)'"
                case .elevated(let generation, _, _) where owed != nil:
                    got = "elevated token e\(generation)"
                case .elevated(let generation, _, _):
                    guard let bought = bought[generation],
                        let later = prompts.first(where: {
                            $0.shownNanos > answered && $0.shownNanos < bought.sentAt
                        })
                    else { continue }
                    got = "elevated token e\(generation), bought after prompt #\(later.index)"
                default:
                    continue
                }
                report(
                    .stepUpSharedNotSticky,
                    "a clinical request waiting on prompt #\(prompt.index), answered \(answer.rawValue), got \(got) (\(call.who))",
                    trace: [
                        "when the user answered, every other task had run as far as it could and no server call was under way: the request could only be waiting on that prompt",
                        "every waiter of one prompt gets its one outcome",
                    ])
            }
        }

        /// A prompt while an elevated token of the session was fresh for half its lifetime and
        /// had been handed out before every elevation call then under way began.
        mutating func fresh(_ prompt: PromptRecord) {
            let inFlight = elevations.filter {
                $0.startedNanos <= prompt.shownNanos && $0.endedNanos >= prompt.shownNanos
            }
            let earliest = inFlight.map(\.startedNanos).min() ?? prompt.shownNanos
            for call in elevations where call.endedNanos < earliest {
                guard case .elevated(let generation, _, let expiresAt) = call.answer,
                    expiresAt > prompt.shownAt + lifetime / 2, let entry = bought[generation],
                    let session = timeline.sessions[entry.family], session.slot == prompt.slot,
                    session.ended.map({ $0.startedNanos > prompt.shownNanos }) ?? true
                else { continue }
                report(
                    .promptSingleFlight,
                    "prompt #\(prompt.index) appeared while the session's elevated token was fresh (\(prompt.phase))",
                    trace: [
                        "elevated token e\(generation) was handed out (\(call.who)) before every request under way began, and was fresh for over half its lifetime"
                    ])
                return
            }
        }

        /// No elevation for a session after the event that ended it returned.
        mutating func judgeElevations() {
            for entry in timeline.entries where entry.call == .elevate {
                guard let session = timeline.sessions[entry.family], let ended = session.ended,
                    entry.sentAt > ended.returnedNanos
                else { continue }
                report(
                    .clientFollowsSession,
                    "an elevation of a session after \(ended.isSignIn ? "the sign-in" : "the sign-out") that ended it returned: something kept it alive",
                    trace: [Oracle.describe(entry)])
                return
            }
        }
    }
}
