import Foundation
import SessionContract
import TokenServer

/// The checks of one storm's refresh calls (the server's ledger entries for one expiry or one
/// burst of 401s) and the calls that waited on them: any driver that makes a storm judges it here.
extension Oracle {
    /// I1: against a healthy server, one expiry costs one refresh call per account.
    ///
    /// `staleAfterSuccess`: the storm's 401s were all for the token the first refresh replaced,
    /// so a refresh sent after it succeeded is a stale 401 refreshing (I6). (A caller that
    /// refreshes again after waiting is shown as I1 by the expiry storm, which has no 401s.)
    package func checkOneRefresh(
        _ attempts: [LedgerEntry], round: Int, what: String, released: Int64?, staleAfterSuccess: Bool = false
    ) {
        guard attempts.count > 1, attempts.allSatisfy({ !$0.isPassingFailure || $0.outcome == .dropped }) else {
            return
        }
        // A session the server refused at the storm's first refresh (revoked before it) was not
        // served by a healthy server: calls that overlapped the refusal are the ledger audit's
        // (two refreshes in flight, I1), and any sent after it the judge's (I27).
        guard !attempts[0].isInvalidGrant else { return }
        let first = attempts[0]
        if staleAfterSuccess, first.deliveredGrant, let answered = first.respondedAt,
            attempts.dropFirst().allSatisfy({ $0.sentAt >= answered })
        {
            report(
                .staleRejectionDoesNotRefresh,
                "\(attempts.count - 1) more refresh call(s) after the 401 storm's refresh had succeeded: 401s for the replaced token refreshed again (round \(round))",
                trace: attempts.prefix(4).map(Self.describe))
            return
        }
        let trace = attempts.prefix(4).map { entry -> String in
            var line = Self.describe(entry)
            if entry.index != first.index, let answered = first.respondedAt {
                let gap = Double(entry.sentAt - answered) / 1e6
                line +=
                    gap >= 0
                    ? String(format: ", sent %.3fms after the first refresh was answered", gap)
                    : String(
                        format: ", sent while the first refresh was in flight (%.3fms before it was answered)", -gap)
            } else if let released {
                line += String(
                    format: ", sent %.3fms before the held refresh was released", Double(released - entry.sentAt) / 1e6)
            }
            return line
        }
        report(
            .singleFlight, "\(attempts.count) refresh calls for one \(what) against a healthy server (round \(round))",
            trace: trace)
    }

    /// I2: with one refresh call, every waiter depended on it, so all must agree.
    package func checkSameOutcome(_ calls: [ObservedCall], attempts: [LedgerEntry], round: Int) {
        guard attempts.count == 1, let answered = attempts[0].respondedAt else { return }
        var tally: [ObservedCall.Shared: [ObservedCall]] = [:]
        // The waiters: callers still in the store when the refresh was answered.
        for call in calls
        where !call.wasCancelled && !call.isSyncRead && call.startedNanos <= answered && call.endedNanos >= answered {
            tally[ObservedCall.Shared(call.answer), default: []].append(call)
        }
        guard tally.count > 1 else { return }
        report(
            .sameOutcome, "waiters of one refresh got different outcomes (round \(round))",
            trace: [Self.describe(attempts[0])]
                + tally.sorted { $0.value.count > $1.value.count }.map {
                    "\($0.value.count) caller(s) got \($0.key), e.g. \($0.value[0].phase) caller \($0.value[0].caller)"
                })
    }

    /// I10: waiters of a failed refresh fail together; they do not each retry. A caller that
    /// reached the store only after the failure may start one more attempt.
    package func checkNoRetryStorm(_ attempts: [LedgerEntry], round: Int) {
        let success = attempts.firstIndex(where: \.deliveredGrant)
        let beforeSuccess = attempts.prefix(upTo: success ?? attempts.count)
        if beforeSuccess.count > 2 {
            report(
                .failureSharedNotSticky,
                "\(beforeSuccess.count) refresh attempts while one storm of callers waited (round \(round)): a retry storm",
                trace: beforeSuccess.prefix(4).map(Self.describe))
        }
        if let success, success < attempts.count - 1 {
            report(
                .singleFlight,
                "the store refreshed again after a refresh had succeeded, in one expiry (round \(round))",
                trace: attempts[success...].prefix(4).map(Self.describe))
        }
    }
}
