import Foundation
import SessionContract
import SessionOracle
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
        _ event: Event, heard: [Heard], ledger: [LedgerEntry], seconds: Double, killedInTurn: Bool, crowded: Bool,
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
        // Past the lock's timeout on a machine that kept the survivors (or this driver) from the
        // CPUs or the disk meanwhile, the wait says nothing about the lock: not judged.
        if let timeout = backend.lockTimeout, seconds > timeout.secondsValue, !crowded {
            oracle.report(
                .served,
                "a replica killed while it held the lock kept the others waiting \(InputRange.text(seconds)) s, "
                    + "past the \(backend.name) lock's timeout of \(InputRange.text(timeout.secondsValue)) s "
                    + "(event \(event.index), \(event.holders) surviving replicas)")
        }
    }

    /// The expiry during which one replica stalled in its turn, its refresh token read: while it
    /// held the lock the others' callers may only wait or fail (`refreshFailed`, a store that gave
    /// up on the lock); no one may reach the server. Then the stalled replica's refresh is the one
    /// refresh of the expiry (I1; a replica that went ahead without the lock makes it a second,
    /// and the stalled one's refresh token a reuse, I7), and every caller afterwards gets a token
    /// issued after the expiry (I4) with no other error (I12, I13). The others may wait for the
    /// lock up to its timeout, with half as much again for the clocks and the round trips (a correct
    /// backend measures within 1% of it); longer, the backend's timeout does not bound the wait (I12).
    func judgeStall(
        index: Int, issuedBefore: UInt64, during: [Heard], holder: [Heard], after: [Heard], waited: Double?,
        crowded: Bool, ledger: [LedgerEntry], handed: inout Set<UInt64>, outcome: inout DriverOutcome
    ) {
        let context = "event \(index), an expiry while one replica stalled holding the \(backend.name) lock"
        // Longer on a machine that kept the waiters (or this driver) from the CPUs or the disk says
        // nothing about the lock: not judged.
        if let waited, let timeout = backend.lockTimeout?.secondsValue, waited > timeout * 1.5, !crowded {
            oracle.report(
                .served,
                "while one replica stalled holding the lock, a caller of another replica waited \(InputRange.text(waited)) s, "
                    + "past the lock's timeout of \(InputRange.text(timeout)) s (\(context))")
        }
        let refreshes = judgeSingleFlight(event: index, name: "expiry", context: context, ledger: ledger)
        let refused = ledger.contains { $0.call == .refresh && $0.isInvalidGrant }
        for answer in (during + holder + after).flatMap(\.answers) {
            outcome.latencies.record(.refreshWait, nanoseconds: answer.nanoseconds)
            if let generation = try? answer.result.get() { handed.insert(generation) }
        }
        func judge(_ answers: [(instance: String, result: Result<UInt64, SessionError>, nanoseconds: Int64)], waiting: Bool) {
            for answer in answers {
                switch answer.result {
                case .success(let generation) where generation <= issuedBefore:
                    oracle.report(
                        .fresh,
                        "a caller got generation \(generation), issued before the expiry (\(context))",
                        trace: ["first seen at \(answer.instance)"])
                case .success:
                    continue
                case .failure(.refreshFailed) where waiting:
                    continue
                case .failure(let error) where !refused:
                    let ends = error == .refreshTokenRevoked || error == .signedOut
                    oracle.report(
                        ends ? .sessionKept : .served,
                        "a caller got \(error) though the server refused nothing and no one signed out ("
                            + (waiting ? "while the lock was held, " : "") + "\(context))",
                        trace: ["first seen at \(answer.instance)"])
                case .failure:
                    continue
                }
            }
        }
        judge(during.flatMap(\.answers), waiting: true)
        judge((holder + after).flatMap(\.answers), waiting: false)
        let answers = (during + holder + after).flatMap(\.answers)
        let failures = answers.filter { (try? $0.result.get()) == nil }.count
        tally(refreshes: refreshes.count, answers: answers.count, failures: failures, outcome: &outcome)
    }

    /// Whether, since `start`, any surviving process (every link but `leaving`'s) or this one was
    /// crowded out of the CPUs or the disk (``CPUTimes/crowdedOut(process:waiter:seconds:cpus:)``).
    static func crowded(
        since start: ContinuousClock.Instant, links: [SessionProcessLink], counts: [CPUTimes?], driver: CPUTimes?,
        leaving: Int, dead: Set<Int> = []
    ) -> Bool {
        let seconds = (ContinuousClock.now - start).secondsValue
        let cpus = CPUPlacement.allowed.count
        let waiter = driver.flatMap { before in CPUTimes.process(getpid()).map { (before, $0) } }
        if CPUTimes.crowdedOut(process: nil, waiter: waiter, seconds: seconds, cpus: cpus) { return true }
        for (index, link) in links.enumerated() where index != leaving && !dead.contains(index) {
            guard let before = counts[index], let pid = link.pid, let now = CPUTimes.process(pid) else { continue }
            if CPUTimes.crowdedOut(process: (before, now), waiter: nil, seconds: seconds, cpus: cpus) { return true }
        }
        return false
    }
}
