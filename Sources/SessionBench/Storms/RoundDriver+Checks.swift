import Foundation
import SessionContract
import SessionMeasurement
import SessionOracle
import TokenServer

/// What each round records, and its judgement (``StormJudge``) once the round is over.
extension RoundDriver {
    /// Latency and counts of served calls; the calls wait for the contract's judgement at the
    /// end of the round (``judgeRound()``), when everything they could depend on has happened.
    /// `timed: false`: what the calls waited was the harness's doing (a save it held), not timed.
    mutating func record(_ calls: [ObservedCall], timed: Bool = true) {
        history.calls += calls
        for call in calls {
            switch call.answer {
            case .error:
                outcome.failedCalls += 1
            case .token(let issued):
                outcome.operations += 1
                if timed { outcome.latencies.record(call.kind, nanoseconds: call.nanoseconds) }
                observedGenerations.insert(issued.generation)
            case .none:
                outcome.operations += 1
                if timed { outcome.latencies.record(call.kind, nanoseconds: call.nanoseconds) }
            }
        }
    }

    /// Judges what a storm was seen to do, as soon as it is recorded (``StormRound``).
    func observe(_ observation: StormRound.Observation) {
        oracle.record(StormJudge.judge(observation, round: history.number, timeline: timeline()))
    }

    /// Judges what the round recorded (``StormJudge``): at its end, once its held refreshes have
    /// landed and been answered, with what each account's storage holds now.
    mutating func judgeRound() {
        let next = StormRound(number: history.number + 1)
        guard !history.calls.isEmpty else {
            history = next
            return
        }
        let timeline = timeline()
        let now = TokenServer.realNanoseconds()
        for (account, storage) in storages.enumerated() {
            guard let (saved, writes) = storage?.contents else { continue }
            history.storage.append(.init(account: account, saved: saved, writes: writes, at: now))
        }
        oracle.record(StormJudge.judge(history, timeline: timeline, contract: &contract))
        coverage.add(history.calls, timeline: timeline, skew: contract.skew)
        history = next
    }

    /// The contract's model of the run so far.
    func timeline() -> SessionTimeline {
        SessionTimeline(events: events, entries: server.ledger.entries, issued: server.issuedTokens)
    }

    /// The refresh calls of `account` the server received since ledger position `start`.
    func refreshes(since start: Int, account: Int) -> [LedgerEntry] {
        server.ledger.entries.dropFirst(start).filter { $0.call == .refresh && accountOfFamily[$0.family] == account }
    }

    /// Records the waiters of a refresh that `fence` discarded, with the families it ended:
    /// they get `signedOut`, never a token of an ended session (I8, I9).
    func observeDiscardedWaiters(_ waiters: [ObservedCall], ended: Set<UInt64>, fence: Fence) {
        observe(
            .discardedWaiters(
                .init(
                    waiters: waiters, ended: ended, fence: fence.description, switchesUser: fence.switchesUser,
                    leavesSignedIn: fence.leavesSignedIn, signedInSlot: signedInSlot)))
    }
}
