import Foundation
import SessionContract
import SessionMeasurement
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
    func recordRecovery(
        _ event: Event, heard: [Heard], ledger: [LedgerEntry], seconds: Double, killedInTurn: Bool, crowded: Bool,
        handed: inout Set<UInt64>, history: inout SharedStorageHistory, outcome: inout DriverOutcome
    ) {
        for answer in heard.flatMap(\.answers) {
            outcome.latencies.record(.refreshWait, nanoseconds: answer.nanoseconds)
            if let generation = try? answer.result.get() { handed.insert(generation) }
        }
        history.observations.append(
            .recovery(
                event, answers: Self.answers(heard), ledger: ledger, seconds: seconds, killedInTurn: killedInTurn,
                crowded: crowded))
        tally(event: event.index, heard: heard, ledger: ledger, outcome: &outcome)
        guard killedInTurn else { return }
        outcome.persistence?.lockHolderRecoverySeconds = seconds
        outcome.persistence?.lockTimeoutSeconds = backend.lockTimeout?.secondsValue
    }

    /// The expiry during which one replica stalled in its turn, its refresh token read
    /// (``SharedStorageJudge``): the others' callers while it held the lock (`during`), the
    /// stalled one's, and everyone's after it; how long the longest waited.
    func recordStall(
        index: Int, issuedBefore: UInt64, during: [Heard], holder: [Heard], after: [Heard], waited: Double?,
        crowded: Bool, ledger: [LedgerEntry], handed: inout Set<UInt64>, history: inout SharedStorageHistory,
        outcome: inout DriverOutcome
    ) {
        for answer in (during + holder + after).flatMap(\.answers) {
            outcome.latencies.record(.refreshWait, nanoseconds: answer.nanoseconds)
            if let generation = try? answer.result.get() { handed.insert(generation) }
        }
        history.observations.append(
            .stall(
                .init(
                    index: index, issuedBefore: issuedBefore, during: Self.answers(during),
                    rest: Self.answers(holder + after), waited: waited, crowded: crowded),
                ledger: ledger))
        tally(event: index, heard: during + holder + after, ledger: ledger, outcome: &outcome)
    }

    /// What the kernel counts at the start of a wait: each replica process's CPU times, this
    /// process's, and the whole machine's pressure (the database server's processes are the
    /// machine's too: a lock it is slow to hand on on a loaded machine is not the backend's).
    struct CrowdingSample {
        let counts: [CPUTimes?]
        let driver: CPUTimes?
        let machine: MachinePressure?

        init(_ links: [SessionProcessLink]) {
            counts = links.map { $0.pid.flatMap { CPUTimes.process($0) } }
            driver = CPUTimes.process(getpid())
            machine = MachinePressure.now()
        }
    }

    /// Whether, since `start`, any surviving process (every link but `leaving`'s) or this one was
    /// crowded out of the CPUs or the disk (``BusyOrHung/crowdedOut(process:waiter:seconds:cpus:)``),
    /// or the machine's tasks waited for them (``MachinePressure/crowded(since:seconds:)``).
    static func crowded(
        since start: ContinuousClock.Instant, from sample: CrowdingSample, links: [SessionProcessLink], leaving: Int,
        dead: Set<Int> = []
    ) -> Bool {
        let seconds = (ContinuousClock.now - start).secondsValue
        let cpus = CPUPlacement.allowed.count
        if let before = sample.machine, MachinePressure.now()?.crowded(since: before, seconds: seconds) == true {
            return true
        }
        let waiter = sample.driver.flatMap { before in CPUTimes.process(getpid()).map { (before, $0) } }
        if BusyOrHung.crowdedOut(process: nil, waiter: waiter, seconds: seconds, cpus: cpus) { return true }
        for (index, link) in links.enumerated() where index != leaving && !dead.contains(index) {
            guard let before = sample.counts[index], let pid = link.pid, let now = CPUTimes.process(pid) else {
                continue
            }
            if BusyOrHung.crowdedOut(process: (before, now), waiter: nil, seconds: seconds, cpus: cpus) { return true }
        }
        return false
    }
}
