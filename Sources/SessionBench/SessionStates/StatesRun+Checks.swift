import SessionContract
import SessionOracle
import TokenServer

/// How `session-states` waits for its subscribers after each change: until every one's latest
/// state is the store's, or the deadline; what it saw is recorded for ``StatesJudge``.
extension StatesRun {
    /// Waits until every subscriber's latest state is `expected`; records those that never got
    /// there. Returns, per subscriber, when it first received `expected` in this wait.
    @discardableResult
    mutating func waitUntil(_ expected: SessionState, event: String) async -> [(Int, Int64?)] {
        let deadline = ContinuousClock.now + SessionStatesDriver.deadline
        let watched = logs.indices.filter { !lost.contains($0) }
        while ContinuousClock.now < deadline, !watched.allSatisfy({ logs[$0].last == expected }) {
            try? await Task.sleep(for: .microseconds(200))
        }
        let behind = watched.filter { logs[$0].last != expected }
        lost.formUnion(behind)
        history.observations.append(
            .followed(
                event: event, expected: expected,
                behind: behind.map { StatesHistory.Behind(subscriber: $0, latest: logs[$0].last) }))
        return watched.map { index in
            let received = logs[index].all
            // The receipt that made it current: the last run of `expected` at the end of the log.
            var at: Int64?
            for entry in received.reversed() {
                guard entry.state == expected else { break }
                at = entry.at
            }
            return (index, at)
        }
    }
}
