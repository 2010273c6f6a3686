import SessionContract
import TokenServer

/// What `session-states` checks: every subscriber reaches each new state, and each subscriber's
/// whole sequence holds no resurrected session, no discarded refresh, nothing out of order.
extension StatesRun {
    /// Waits until every subscriber's latest state is `expected`; reports those that never got
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
        if let first = behind.first {
            oracle.report(
                .observersSeeFinalState,
                "\(behind.count) of \(observers) subscriber(s) never saw '\(expected)' after \(event)",
                trace: ["subscriber \(first)'s latest state: \(logs[first].last.map { "\($0)" } ?? "nothing received")"])
        }
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

    /// Over each subscriber's whole sequence: no state of a session after the `signedOut` that
    /// followed it, nothing of a discarded refresh, sessions and generations never going back.
    func checkSequences() {
        let entries = server.ledger.entries
        var familyOf: [UInt64: UInt64] = [:]
        for entry in entries { if let generation = entry.issuedGeneration { familyOf[generation] = entry.family } }
        for (index, log) in logs.enumerated() {
            var seen: Set<UInt64> = []
            var dead: Set<UInt64> = []
            var latest: (family: UInt64, generation: UInt64)?
            var previous: SessionState?
            for (state, _) in log.all {
                defer { previous = state }
                if state == .signedOut {
                    dead.formUnion(seen)
                    continue
                }
                guard let generation = state.generation else { continue }
                let family = familyOf[generation] ?? 0
                if discarded.contains(generation) {
                    oracle.report(
                        .noSignedInAfterSignOut,
                        "a subscriber was told of a refresh that a sign-out had discarded",
                        trace: ["subscriber \(index): '\(state)' (family \(family)), after '\(previous.map { "\($0)" } ?? "nothing")'"])
                } else if dead.contains(family) {
                    oracle.report(
                        .noSignedInAfterSignOut,
                        "a subscriber saw a session's state after the 'signed out' that ended it",
                        trace: ["subscriber \(index): '\(state)' of family \(family) after 'signed out'"])
                }
                if let latest, family < latest.family || (family == latest.family && generation < latest.generation) {
                    oracle.report(
                        .stateOrder,
                        "a subscriber saw states out of order: generation \(generation) (family \(family)) after generation \(latest.generation) (family \(latest.family))",
                        trace: ["subscriber \(index): '\(state)' after '\(previous.map { "\($0)" } ?? "nothing")'"])
                }
                if latest == nil || family > latest!.family || (family == latest!.family && generation > latest!.generation) {
                    latest = (family, generation)
                }
                seen.insert(family)
            }
        }
    }
}
