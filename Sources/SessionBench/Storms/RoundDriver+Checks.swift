import Foundation
import SessionContract
import SessionOracle
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

    /// I8/I9: the waiters of a refresh that a sign-out or a user switch discarded get
    /// `signedOut`, never a token of the ended session. A token of the session a switch began
    /// is the judge's (a call belongs to the session current when it started), and so is any
    /// error, whose cause it asks.
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
                            "\(call.who) got generation \(issued.generation) (family \(family), ended)",
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
                            "\(call.who) got generation \(issued.generation)",
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
