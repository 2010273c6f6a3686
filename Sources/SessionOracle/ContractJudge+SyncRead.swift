import SessionContract
import TokenServer

/// A `nil` from the synchronous read: when the contract allows one, call by call and over a
/// phase of counted reads.
extension ContractJudge {
    /// `currentToken()` answered `nil`: only when no session was surely current, its token was
    /// due, or a refresh was possibly under way — at the server, or asked for by a 401 of the
    /// newest token that was running during the call, or by one whose caller was cancelled before
    /// the server answered the refresh it started — (or the store was still taking in the
    /// newest grant).
    func judgeNil(
        _ call: ObservedCall, who: String, _ timeline: SessionTimeline, requireHandedOut: Bool = true
    ) -> Finding? {
        let atStart = timeline.current(account: call.account, at: call.startedNanos)
        let atEnd = timeline.current(account: call.account, at: call.endedNanos)
        guard !atStart.noneAllowed, !atEnd.noneAllowed, atStart.families.count == 1,
            atEnd.families == atStart.families, let family = atStart.families.first,
            let session = timeline.sessions[family],
            timeline.eventOverlaps(account: call.account, call.startedNanos, call.endedNanos) == nil,
            (session.refusedAt ?? .max) > call.endedNanos,
            timeline.refreshOverlaps(family: family, call.startedNanos, call.endedNanos) == nil,
            let newest = timeline.newestDelivered(family: family, by: call.startedNanos),
            let record = timeline.issued[newest], record.expiresAt > call.endedAt + skew,
            // A 401 of the newest token running during the call, or one cancelled before it whose
            // refresh the server had not answered yet (on its way, or not sent).
            !(rejections[newest] ?? []).contains(where: { rejection in
                rejection.started <= call.endedNanos
                    && (rejection.ended >= call.startedNanos
                        || (rejection.cancelled
                            && !timeline.refreshes(of: family).contains {
                                $0.presentedGeneration == newest && $0.sentAt >= rejection.started
                                    && ($0.respondedAt ?? .max) < call.startedNanos
                            }))
            }),
            // The store had taken the newest grant in: a caller had been handed it.
            !requireHandedOut
                || (watermark.highest(family: family, endedBefore: call.startedNanos)?.generation ?? 0) >= newest
        else { return nil }
        return Finding(
            invariant: .served,
            summary: "\(who): currentToken() answered nil with a fresh token and no refresh under way",
            trace: [
                "generation \(newest) (family \(family)) was current and handed out before the call; it expires at \(record.expiresAt.nanoseconds)ns, the call ran at \(call.startedAt.nanoseconds)ns",
                "no sign-in, sign-out or refresh of the session was under way during the call, and no 401 of it was running",
            ])
    }

    /// `misses` of `calls` to `currentToken()`, counted (not recorded one by one) over a phase
    /// from `start` to `end` (real nanoseconds, store clock): a nil needs a reason somewhere in it.
    package func judgeMisses(
        _ misses: UInt64, of calls: UInt64, account: Int, timeline: SessionTimeline,
        from start: (Int64, TokenInstant), to end: (Int64, TokenInstant)
    ) -> Finding? {
        guard misses > 0 else { return nil }
        let phase = ObservedCall(
            caller: 0, account: account, kind: .syncRead, request: .currentToken, phase: "synchronous reads",
            startedAt: start.1, endedAt: end.1, startedNanos: start.0, endedNanos: end.0, answer: .none,
            wasCancelled: false)
        guard let finding = judgeNil(phase, who: "synchronous reads", timeline, requireHandedOut: false) else {
            return nil
        }
        return Finding(
            invariant: finding.invariant,
            summary:
                "synchronous reads: currentToken() answered nil \(misses) time(s) of \(calls), with a fresh token and no refresh under way",
            trace: finding.trace)
    }
}
