import Foundation
import SessionContract
import TokenServer

/// What every call of a round is checked against, and the checks of one storm or fence.
extension RoundDriver {
    /// Latency and counts of served calls; the calls wait for the contract's judgement at the
    /// end of the round (``judgeRound()``), when everything they could depend on has happened.
    mutating func record(_ calls: [ObservedCall]) {
        unjudged += calls
        for call in calls {
            switch call.answer {
            case .error:
                outcome.failedCalls += 1
            case .token(let issued):
                outcome.operations += 1
                outcome.latencies.record(call.kind, nanoseconds: call.nanoseconds)
                observedGenerations.insert(issued.generation)
            case .none:
                outcome.operations += 1
                outcome.latencies.record(call.kind, nanoseconds: call.nanoseconds)
            }
        }
    }

    /// Judges the calls recorded since the last judgement against the contract (``ContractJudge``):
    /// at the end of each round, once its held refreshes have landed and been answered.
    mutating func judgeRound() {
        guard !unjudged.isEmpty else { return }
        let oracle = self.oracle
        let timeline = timeline()
        contract.judge(unjudged, timeline: timeline) { oracle.report($0) }
        let now = TokenServer.realNanoseconds()
        for (account, storage) in storages.enumerated() {
            guard let (saved, writes) = storage?.contents else { continue }
            contract.judgeStorage(
                saved: saved, writes: writes, account: account, calls: unjudged, timeline: timeline, at: now
            ) { oracle.report($0) }
        }
        coverage.add(unjudged, timeline: timeline, skew: contract.skew)
        unjudged = []
    }

    /// The contract's model of the run so far.
    func timeline() -> SessionTimeline {
        SessionTimeline(events: events, entries: server.ledger.entries, issued: server.issuedTokens)
    }

    /// The refresh calls of `account` the server received since ledger position `start`.
    func refreshes(since start: Int, account: Int) -> [LedgerEntry] {
        server.ledger.entries.dropFirst(start).filter { $0.call == .refresh && accountOfFamily[$0.family] == account }
    }

    /// I1: against a healthy server, one expiry costs one refresh call per account.
    ///
    /// `staleAfterSuccess`: the storm's 401s were all for the token the first refresh replaced,
    /// so a refresh sent after it succeeded is a stale 401 refreshing (I6). (A caller that
    /// refreshes again after waiting is shown as I1 by the expiry storm, which has no 401s.)
    func checkOneRefresh(
        _ attempts: [LedgerEntry], round: Int, what: String, released: Int64?, staleAfterSuccess: Bool = false
    ) {
        guard attempts.count > 1, attempts.allSatisfy({ !$0.isPassingFailure || $0.outcome == .dropped }) else {
            return
        }
        let first = attempts[0]
        if staleAfterSuccess, first.deliveredGrant, let answered = first.respondedAt,
            attempts.dropFirst().allSatisfy({ $0.sentAt >= answered })
        {
            oracle.report(
                .staleRejectionDoesNotRefresh,
                "\(attempts.count - 1) more refresh call(s) after the 401 storm's refresh had succeeded: 401s for the replaced token refreshed again (round \(round))",
                trace: attempts.prefix(4).map(Oracle.describe))
            return
        }
        let trace = attempts.prefix(4).map { entry -> String in
            var line = Oracle.describe(entry)
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
        oracle.report(
            .singleFlight, "\(attempts.count) refresh calls for one \(what) against a healthy server (round \(round))",
            trace: trace)
    }

    /// I2: with one refresh call, every waiter depended on it, so all must agree.
    func checkSameOutcome(_ calls: [ObservedCall], attempts: [LedgerEntry], round: Int) {
        guard attempts.count == 1, let answered = attempts[0].respondedAt else { return }
        var tally: [ObservedCall.Shared: [ObservedCall]] = [:]
        // The waiters: callers still in the store when the refresh was answered.
        for call in calls
        where !call.wasCancelled && !call.isSyncRead && call.startedNanos <= answered && call.endedNanos >= answered {
            tally[ObservedCall.Shared(call.answer), default: []].append(call)
        }
        guard tally.count > 1 else { return }
        oracle.report(
            .sameOutcome, "waiters of one refresh got different outcomes (round \(round))",
            trace: [Oracle.describe(attempts[0])]
                + tally.sorted { $0.value.count > $1.value.count }.map {
                    "\($0.value.count) caller(s) got \($0.key), e.g. \($0.value[0].phase) caller \($0.value[0].caller)"
                })
    }

    /// I10: waiters of a failed refresh fail together; they do not each retry. A caller that
    /// reached the store only after the failure may start one more attempt.
    func checkNoRetryStorm(_ attempts: [LedgerEntry], round: Int) {
        let success = attempts.firstIndex(where: \.deliveredGrant)
        let beforeSuccess = attempts.prefix(upTo: success ?? attempts.count)
        if beforeSuccess.count > 2 {
            oracle.report(
                .failureSharedNotSticky,
                "\(beforeSuccess.count) refresh attempts while one storm of callers waited (round \(round)): a retry storm",
                trace: beforeSuccess.prefix(4).map(Oracle.describe))
        }
        if let success, success < attempts.count - 1 {
            oracle.report(
                .singleFlight,
                "the store refreshed again after a refresh had succeeded, in one expiry (round \(round))",
                trace: attempts[success...].prefix(4).map(Oracle.describe))
        }
    }

    /// I8/I9: the waiters of a refresh that a sign-out or a user switch discarded get
    /// `signedOut` (or, after a switch, the new user's token) — never a token of the ended
    /// session. Any other error is left to the judge, which asks what caused it.
    func checkDiscardedWaiters(_ waiters: [ObservedCall], ended: Set<UInt64>, fence: Fence, round: Int) {
        for call in waiters where !call.wasCancelled {
            switch call.answer {
            case .token(let issued):
                let family = server.issuedTokens[issued.generation]?.family
                if let family, ended.contains(family) {
                    oracle.report(
                        fence.switchesUser ? .noCrossUserLeak : .signOutFence,
                        "a waiter of the refresh discarded by the \(fence) got generation \(issued.generation) of the ended session (round \(round))",
                        trace: [
                            "round \(round): the refresh was held at the server while callers waited",
                            "the \(fence) returned; then the held refresh was released and landed",
                            "\(call.phase): caller \(call.caller) got generation \(issued.generation) (family \(family), ended)",
                        ]
                            + (server.ledger.entries.first { $0.issuedGeneration == issued.generation }.map {
                                ["issued by " + Oracle.describe($0)]
                            } ?? []))
                    return
                }
                if !fence.leavesSignedIn || issued.subjectSlot != signedInSlot[call.account] {
                    oracle.report(
                        .signOutFence,
                        "a waiter of the refresh discarded by the \(fence) got generation \(issued.generation), not 'signed out' (round \(round))",
                        trace: [
                            "round \(round): the refresh was held at the server while callers waited; the \(fence) returned before it landed",
                            "\(call.phase): caller \(call.caller) got generation \(issued.generation)",
                        ])
                    return
                }
            case .error, .none:
                // An error is judged like any call's: 'signed out' overlapped the fence; others need a cause.
                continue
            }
        }
    }
}
