import SessionContract
import TokenServer

/// Which session a call belongs to: the one current when it started (``SessionTimeline/current(account:at:)``).
extension ContractJudge {
    /// A token of a session that was not current when the call started: one whose sign-in
    /// began after it (one that ended before it started is `judgeToken`'s). The call's own session
    /// ended while it waited, so its answer is `signedOut` or a token of that session; another
    /// user's token is a leak across users (I9), the same user's new session's a crossed fence
    /// (I8).
    package func judgeLaterSession(
        _ token: ObservedCall.Issued, session: SessionTimeline.Session, call: ObservedCall, who: String,
        _ timeline: SessionTimeline
    ) -> Finding? {
        let atStart = timeline.current(account: call.account, at: call.startedNanos)
        guard !atStart.families.contains(session.family) else { return nil }
        let earlier = atStart.families.compactMap { timeline.sessions[$0] }.max { $0.began.startedNanos < $1.began.startedNanos }
        let switched = earlier.map { $0.slot != session.slot } ?? false
        let before =
            earlier.map {
                "the account's session was family \($0.family)\($0.slot != session.slot ? " (another user)" : ""), "
                    + "signed in at \(relative($0.began.startedNanos, timeline))"
            } ?? "no session was current"
        return Finding(
            invariant: switched ? .noCrossUserLeak : .signOutFence,
            summary:
                "\(who) got generation \(token.generation) of a session whose sign-in began after the call started: a call belongs to the session current when it started",
            trace: [
                "when the call started at \(relative(call.startedNanos, timeline)), \(before)",
                "family \(session.family)'s sign-in started at \(relative(session.began.startedNanos, timeline)); the call returned its generation \(token.generation)",
            ] + issuance(of: token.generation, timeline))
    }
}
