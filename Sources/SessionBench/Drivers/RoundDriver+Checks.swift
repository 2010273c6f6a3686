import Foundation
import SessionContract
import TokenServer

/// What every call of a round is checked against, and the checks of one storm or fence.
extension RoundDriver {
    /// Latency and counts of served calls, and the checks every call gets: fresh (I4),
    /// monotonic across every caller of the account (I5), and the judge (I8–I13).
    mutating func record(_ calls: [ObservedCall]) {
        scanLedger()
        let judge = OutcomeJudge(
            entries: server.ledger.entries, accountOfFamily: accountOfFamily, familyOfGeneration: familyOfGeneration,
            events: events)
        watermark.add(calls)
        for call in calls {
            if let finding = judge.judge(call) { oracle.report(finding) }
            guard case .success(let issued) = call.outcome else {
                outcome.failedCalls += 1
                continue
            }
            outcome.operations += 1
            outcome.latencies.record(call.kind, nanoseconds: call.nanoseconds)
            observedGenerations.insert(issued.generation)
            if issued.expiresAt <= call.startedAt {
                oracle.report(
                    .fresh,
                    "\(call.phase): caller \(call.caller) got generation \(issued.generation), already expired when it asked",
                    trace: [
                        "the token expired at \(issued.expiresAt.nanoseconds)ns on the store's clock; the call started at \(call.startedAt.nanoseconds)ns"
                    ]
                        + (server.ledger.entries.first { $0.issuedGeneration == issued.generation }.map {
                            ["issued by " + Oracle.describe($0)]
                        } ?? []))
            }
            if let seen = watermark.highest(account: call.account, endedBefore: call.startedNanos),
                issued.generation < seen.generation
            {
                oracle.report(
                    .monotonic,
                    "\(call.phase): caller \(call.caller) got generation \(issued.generation) after generation \(seen.generation) had been handed out",
                    trace: [
                        "\(seen.phase): caller \(seen.caller) got generation \(seen.generation) and returned before the later call started",
                        "\(call.phase): caller \(call.caller) then got the older generation \(issued.generation)",
                    ])
            }
        }
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
        for call in calls where !call.wasCancelled && call.startedNanos <= answered && call.endedNanos >= answered {
            tally[ObservedCall.Shared(call.outcome), default: []].append(call)
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

    /// I6: a 401 for the token the store holds must bring a newer one, never the same again.
    func checkRejectionRefreshed(_ calls: [ObservedCall], rejected: AccessToken) {
        for call in calls {
            guard let issued = call.token, issued.generation <= rejected.generation else { continue }
            oracle.report(
                .staleRejectionDoesNotRefresh,
                "\(call.phase): a 401 for the current token (generation \(rejected.generation)) returned generation \(issued.generation): the request would fail again",
                trace: ["caller \(call.caller) reported the 401; no newer token came back"])
            return
        }
    }

    /// I8/I9: the waiters of a refresh that a sign-out or a user switch discarded get
    /// `signedOut` (or, after a switch, the new user's token) — never a token of the ended
    /// session. Any other error is left to the judge, which asks what caused it.
    func checkDiscardedWaiters(_ waiters: [ObservedCall], ended: Set<UInt64>, fence: Fence, round: Int) {
        for call in waiters where !call.wasCancelled {
            switch call.outcome {
            case .success(let issued):
                let family = familyOfGeneration[issued.generation]
                if let family, ended.contains(family) {
                    oracle.report(
                        fence == .userSwitch ? .noCrossUserLeak : .signOutFence,
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
                if fence == .signOut || issued.subjectSlot != signedInSlot[call.account] {
                    oracle.report(
                        .signOutFence,
                        "a waiter of the refresh discarded by the \(fence) got generation \(issued.generation), not 'signed out' (round \(round))",
                        trace: [
                            "round \(round): the refresh was held at the server while callers waited; the \(fence) returned before it landed",
                            "\(call.phase): caller \(call.caller) got generation \(issued.generation)",
                        ])
                    return
                }
            case .failure:
                // An error is judged like any call's: 'signed out' overlapped the fence; others need a cause.
                continue
            }
        }
    }
}
