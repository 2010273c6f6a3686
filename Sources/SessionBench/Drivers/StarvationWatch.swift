import Foundation
import SessionContract
import SessionMeasurement
import SessionOracle
import SessionSync
import Synchronization

/// What a coordinator was waiting for when the process stopped running tasks.
public struct Starvation: Sendable {
    /// The phase, as a hang report names it (`round 3`, `steady reads`).
    public let phase: String
    /// Callers still inside the store, and of how many.
    public let stuckCallers: Int
    public let ofCallers: Int
    public let operation: OperationKind
    /// What the server saw of the phase's refreshes, for the report.
    public let detail: String
}

/// Tells whether the coordinator of one run keeps making progress.
///
/// Before each wait the coordinator says by when it will be back (its own deadline, plus a
/// grace for a busy machine) and what it is waiting for. When it is not back by then, the
/// watchdog thread asks the cooperative pool whether it runs anything at all: it enqueues a
/// probe task at the coordinator's own priority (a higher one may get a thread of its own)
/// and watches the process's CPU time. If the probe runs, the pool
/// is only busy (a loaded machine, a sanitizer) and the wait goes on. If it does not, and the
/// process is idle — its threads blocked, not working — the pool is starved, and `onStarved`
/// is called once with the description. A pool whose threads spin without running the probe
/// gets a few more chances, then counts as starved too. The coordinator may never run again
/// after that, so `onStarved` must do whatever reporting is left (the measuring process
/// writes its verdict and exits).
final class StarvationWatch: Sendable {
    private struct Armed {
        var generation: UInt64 = 0
        var timer: Watchdog.TimerID?
        var fired = false
    }

    private let armed = Mutex(Armed())
    private let onStarved: @Sendable (Starvation) -> Void
    let grace: Duration
    /// How long the probe is given to run.
    static let probeWindow: Duration = .milliseconds(500)
    /// Probe windows a spinning, probe-starving pool is given before it counts as starved.
    /// (A merely busy pool runs the probe sooner or later: 10 s of chances.)
    static let spinningChances = BusyOrHung.spinningChances

    init(grace: Duration, onStarved: @escaping @Sendable (Starvation) -> Void) {
        self.grace = grace
        self.onStarved = onStarved
    }

    /// The coordinator expects to be back by `deadline` (grace is added here).
    func expectBack(by deadline: ContinuousClock.Instant, describe: @escaping @Sendable () -> Starvation) {
        let priority = Task.currentPriority
        armed.withLock(visibleTo: self) { armed in
            armed.generation &+= 1
            schedule(
                &armed, at: deadline + grace, generation: armed.generation, priority: priority, spinning: 0,
                describe: describe)
        }
    }

    /// The coordinator is back.
    func back() {
        armed.withLock(visibleTo: self) { armed in
            armed.generation &+= 1
            if let timer = armed.timer { Watchdog.shared.cancel(timer) }
            armed.timer = nil
        }
    }

    private func schedule(
        _ armed: inout Armed, at due: ContinuousClock.Instant, generation: UInt64, priority: TaskPriority,
        spinning: Int,
        describe: @escaping @Sendable () -> Starvation
    ) {
        if let timer = armed.timer { Watchdog.shared.cancel(timer) }
        armed.timer = Watchdog.shared.schedule(at: due) { [self] in
            guard isCurrent(generation) else { return }
            probe(generation: generation, priority: priority, spinning: spinning, describe: describe)
        }
    }

    private func isCurrent(_ generation: UInt64) -> Bool {
        armed.withLock(visibleTo: self) { $0.generation == generation && !$0.fired }
    }

    /// Runs on the watchdog thread when the coordinator is late.
    private func probe(
        generation: UInt64, priority: TaskPriority, spinning: Int, describe: @escaping @Sendable () -> Starvation
    ) {
        let ran = ProbeFlag()
        Task.detached(priority: priority) { ran.flag.store(true, ordering: .releasing) }
        let cpuBefore = ResourceUsage.cpuSeconds
        let waitedBefore = CPUTimes.process(getpid())?.waitedNanoseconds
        let window = Self.probeWindow
        let timer = Watchdog.shared.schedule(at: .now + window) { [self] in
            let alive = ran.flag.load(ordering: .acquiring)
            // Working, or waiting for a CPU that a loaded machine gives to others: either way the
            // threads are not all blocked.
            var waited = 0.0
            if let waitedBefore, let waitedAfter = CPUTimes.process(getpid())?.waitedNanoseconds {
                waited = Double(waitedAfter &- waitedBefore) / 1e9
            }
            let busy = BusyOrHung.poolBusy(
                ranSeconds: ResourceUsage.cpuSeconds - cpuBefore, waitedSeconds: waited, window: window.secondsValue)
            let starved = BusyOrHung.poolStarved(probeRan: alive, busy: busy, spinning: spinning)
            let fire = armed.withLock(visibleTo: self) { armed -> Bool in
                guard armed.generation == generation, !armed.fired else { return false }
                if starved {
                    armed.fired = true
                    return true
                }
                // Alive but slow, or spinning: look again after another grace.
                schedule(
                    &armed, at: .now + (alive ? grace : window), generation: generation, priority: priority,
                    spinning: alive ? 0 : spinning + 1, describe: describe)
                return false
            }
            if fire { onStarved(describe()) }
        }
        armed.withLock(visibleTo: self) { armed in
            if armed.generation == generation { armed.timer = timer } else { Watchdog.shared.cancel(timer) }
        }
    }
}

/// Set by a probe task when the cooperative pool runs it.
private final class ProbeFlag: Sendable {
    let flag = Atomic(false)
}
