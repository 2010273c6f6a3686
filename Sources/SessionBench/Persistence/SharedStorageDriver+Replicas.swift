import SessionContract
import SessionStorage
import TokenServer

/// The checks only `replicas` makes: what a replica that died holding the lock cost the others.
extension SharedStorageDriver {
    /// The expiry after a replica was killed inside its turn: judged as any expiry (one refresh for
    /// every surviving replica, fresh tokens for all their callers), and timed from the kill. A
    /// backend whose lock has a timeout must let the others through within it: a dead holder's lock
    /// goes with its connection, and at worst a waiter gives up after the timeout and the next
    /// caller tries again. A replica that answered instead of taking its turn (its session was
    /// already over, say) died holding nothing: the expiry is judged, the recovery not timed.
    func judgeRecovery(
        _ event: Event, heard: [Heard], ledger: [LedgerEntry], seconds: Double, killedInTurn: Bool,
        handed: inout Set<UInt64>, outcome: inout DriverOutcome
    ) {
        for answer in heard.flatMap(\.answers) {
            outcome.latencies.record(.refreshWait, nanoseconds: answer.nanoseconds)
            if let generation = try? answer.result.get() { handed.insert(generation) }
        }
        judge(event, heard: heard, ledger: ledger, outcome: &outcome)
        guard killedInTurn else { return }
        outcome.persistence?.lockHolderRecoverySeconds = seconds
        outcome.persistence?.lockTimeoutSeconds = backend.lockTimeout?.secondsValue
        if let timeout = backend.lockTimeout, seconds > timeout.secondsValue {
            oracle.report(
                .served,
                "a replica killed while it held the lock kept the others waiting \(InputRange.text(seconds)) s, "
                    + "past the \(backend.name) lock's timeout of \(InputRange.text(timeout.secondsValue)) s "
                    + "(event \(event.index), \(event.holders) surviving replicas)")
        }
    }
}
