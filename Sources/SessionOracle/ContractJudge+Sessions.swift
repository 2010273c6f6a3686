import SessionContract
import TokenServer

/// Which session a call belongs to: the one current when it started (``SessionTimeline/current(account:at:)``).
extension ContractJudge {
    /// A token of a session that was not current when the call started: one whose sign-in
    /// began after it (one that ended before it started is `judgeToken`'s). The call's own session
    /// ended while it waited, so its answer is `signedOut` or a token of that session; another
    /// user's token is a leak across users (I9), the same user's new session's a crossed fence
    /// (I8).
    ///
    /// A call's start is read just before it enters the store, and its thread may not run again
    /// until after a sign-in that began later (a loaded machine, a pool busy elsewhere): the
    /// store then sees the call after the sign-in, and the new session's token is right. So a
    /// call is held to its own session only when it must have been waiting in the store on it:
    /// its start was its entry (``startsAreEntries``: the controlled executor, which `compare`
    /// runs every store × scenario through too), and a refresh of that session was in flight when
    /// the later sign-in began. In real time no record of the call dates its entry: a refresh in
    /// flight then was other callers', and this caller may still have been on its way in (seen
    /// under ThreadSanitizer: a lock store's caller got the new user's token, correctly).
    package func judgeLaterSession(
        _ token: ObservedCall.Issued, session: SessionTimeline.Session, call: ObservedCall, who: String,
        _ timeline: SessionTimeline
    ) -> Finding? {
        guard startsAreEntries else { return nil }
        let atStart = timeline.current(account: call.account, at: call.startedNanos)
        guard !atStart.families.contains(session.family) else { return nil }
        let began = session.began.startedNanos
        guard
            let waitedOn = atStart.families.lazy.compactMap({ family in
                timeline.refreshes(of: family).first { $0.sentAt <= began && ($0.respondedAt ?? .max) >= began }
            }).first
        else { return nil }
        let earlier = atStart.families.compactMap { timeline.sessions[$0] }.max {
            $0.began.startedNanos < $1.began.startedNanos
        }
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
                "a refresh of the call's session was in flight then: " + Oracle.describe(waitedOn),
                "family \(session.family)'s sign-in started at \(relative(began, timeline)); the call returned its generation \(token.generation)",
            ] + issuance(of: token.generation, timeline))
    }
}
