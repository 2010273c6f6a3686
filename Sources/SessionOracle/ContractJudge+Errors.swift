import Foundation
import SessionContract
import TokenServer

/// A call that ended in an error: which error the contract allowed it, from what the server
/// did while it waited and what the caller's session was — the rules ``ErrorRule`` states.
extension ContractJudge {
    /// Where the clock jumps while calls run (``clockMovesDuringCalls``), whether `refresh`'s token
    /// had expired by the end of `call`: the jump may have come between the server's answer and
    /// the store taking it in, so for the store the token arrived expired, a failed refresh.
    func expiredBeforeTakenIn(_ refresh: LedgerEntry, by call: ObservedCall, _ timeline: SessionTimeline) -> Bool {
        guard clockMovesDuringCalls, let generation = refresh.issuedGeneration,
            let record = timeline.issued[generation]
        else { return false }
        return record.expiresAt <= call.endedAt
    }

    package func judgeError(
        _ error: SessionError, call: ObservedCall, who: String, _ timeline: SessionTimeline, calls: [ObservedCall] = []
    ) -> Finding? {
        let current = timeline.current(account: call.account, at: call.startedNanos)
        let overlapping = timeline.eventOverlaps(account: call.account, call.startedNanos, call.endedNanos)
        // The call's own session: the one current when it started (either side of a sign-in or
        // sign-out under way then). A session a later sign-in began is not its own.
        let families = current.families
        let refreshes = families.flatMap { timeline.refreshes(of: $0) }.sorted { $0.sentAt < $1.sentAt }
        switch error {
        case .cancelled:
            return Finding(
                invariant: .cancellationIsolated, summary: "\(who) was not cancelled but got 'cancelled'",
                trace: ["the harness cancelled other callers waiting on the same refresh, not this one"]
                    + attemptsTrace(refreshes, during: call, timeline))
        case .refreshFailed:
            let during = refreshes.filter {
                ($0.isPassingFailure || expiredBeforeTakenIn($0, by: call, timeline)) && answered($0, within: call)
            }
            if let cancelled = during.first(where: { $0.outcome == .dropped || $0.lostByClient }),
                !during.contains(where: { $0.outcome != .dropped && !$0.lostByClient })
            {
                return Finding(
                    invariant: .cancellationIsolated,
                    summary: "\(who) got 'refresh failed': the refresh it waited on was cancelled with another caller",
                    trace: ["the server saw the refresh's connection dropped: " + Oracle.describe(cancelled)])
            }
            if !during.isEmpty { return nil }
            // A failure the store was still handing to its waiters when the call began (one of them
            // not back yet) is shared, not replayed: the refresh was not over for the store.
            if refreshes.contains(where: {
                $0.isPassingFailure && ($0.respondedAt ?? .max) < call.startedNanos
                    && stillDelivering($0, at: call.startedNanos, to: call, calls)
            }) {
                return nil
            }
            // The server refused the session: it is over, and 'refresh failed' tells the app to
            // try again. (Before the store's own rate limit: the refusal explains the failure.)
            if let refused = families.compactMap({ timeline.sessions[$0]?.refusedAt }).filter({ $0 <= call.endedNanos })
                .min()
            {
                return Finding(
                    invariant: .served,
                    summary:
                        "\(who) got 'refresh failed' (may pass) though the server had refused its session's refresh token: the session is over ('refresh token revoked' or 'signed out')",
                    trace: ["the refusal was answered at \(relative(refused, timeline))"]
                        + attemptsTrace(refreshes, during: call, timeline))
            }
            if isStoreLimitRefusal(call, timeline) { return nil }
            let earlier = refreshes.filter { $0.isPassingFailure && ($0.respondedAt ?? .max) < call.startedNanos }
            if let last = earlier.last {
                return Finding(
                    invariant: .failureSharedNotSticky,
                    summary:
                        "\(who) got 'refresh failed' though no refresh of its session failed while it waited: an earlier failure was replayed",
                    trace: ["the last failed refresh, answered before the call started: " + Oracle.describe(last)]
                        + attemptsTrace(refreshes, during: call, timeline))
            }
            return Finding(
                invariant: .served,
                summary:
                    "\(who) got 'refresh failed' with no failed refresh of its session behind it: the store gave up",
                trace: attemptsTrace(refreshes, during: call, timeline))
        case .refreshTokenRevoked:
            // ErrorRule.revokedWhen.
            if families.contains(where: { (timeline.sessions[$0]?.refusedAt ?? .max) <= call.endedNanos }) {
                return nil
            }
            // A refresh token the server never knew cannot be traced to a session: it counts for
            // the account's sessions under way then.
            if !families.isEmpty,
                timeline.entries.contains(where: {
                    $0.call == .refresh && $0.outcome == .unknownToken && ($0.respondedAt ?? .max) <= call.endedNanos
                        && $0.sentAt
                            >= (families.compactMap { timeline.sessions[$0]?.began.startedNanos }.min() ?? .max)
                })
            {
                return nil
            }
            return Finding(
                invariant: .sessionKept,
                summary: families.isEmpty
                    ? "\(who) got 'refresh token revoked' with no session signed in: 'signed out' is the answer then"
                    : "\(who) got 'refresh token revoked' though the server never refused its session's refresh token",
                trace: attemptsTrace(refreshes, during: call, timeline))
        case .signedOut:
            // ErrorRule.signedOutWhen: no session, the user ended it, or the server did.
            if current.noneAllowed || overlapping != nil { return nil }
            if families.contains(where: { (timeline.sessions[$0]?.refusedAt ?? .max) <= call.endedNanos }) {
                return nil
            }
            return Finding(
                invariant: .sessionKept,
                summary:
                    "\(who) got 'signed out' while the session was signed in (no sign-out, no sign-in, no refusal from the server)",
                trace: attemptsTrace(refreshes, during: call, timeline))
        default:
            return Finding(
                invariant: .served, summary: "\(who) got '\(error)' from a token request",
                trace: attemptsTrace(refreshes, during: call, timeline))
        }
    }

    /// Whether the store was still handing the answer of `refresh` to its waiters at `start`: a
    /// call under way when it came had not returned yet. (A store learns of an answer in the
    /// refresh's task, and tells its callers in steps of their own: a call that joins in between
    /// is one more waiter, not a later call. Which refresh a call waited on is not recorded, so a
    /// call that spans two answers counts for both; one still out is enough.)
    func stillDelivering(_ refresh: LedgerEntry, at start: Int64, to call: ObservedCall, _ calls: [ObservedCall])
        -> Bool
    {
        let waiters = calls.filter {
            $0.caller != call.caller && $0.account == call.account && answered(refresh, within: $0)
        }
        return waiters.contains { $0.endedNanos > start }
    }
}
