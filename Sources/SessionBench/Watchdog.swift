import Foundation
import SessionSync
import Synchronization

/// Deadlines kept by an OS thread of their own, outside Swift's cooperative pool.
///
/// The harness's coordinator and the store's callers share the cooperative pool. A store
/// that blocks pool threads (a semaphore wait or a lock held across an `await`, the common
/// "make it single-flight with a semaphore" pattern) can take every one of them: then no
/// task runs again, a timer built from `Task.sleep` never fires, and the coordinator never
/// gets to report the hang. Deadlines kept here still fire: they resume waiting
/// continuations from this thread, and a ``StarvationWatch`` that the coordinator does not
/// answer in time tells its owner the pool is starved, with what was known then.
public final class Watchdog: Sendable {
    public struct TimerID: Hashable, Sendable { let raw: UInt64 }

    private struct Timer {
        let id: UInt64
        let deadline: ContinuousClock.Instant
        let action: @Sendable () -> Void
    }

    private struct State {
        var timers: [Timer] = []
        var nextID: UInt64 = 0
        var started = false
    }

    private let state = Mutex(State())
    private let condition = NSCondition()

    /// The one watchdog thread of this process.
    public static let shared = Watchdog()

    private init() {}

    /// Runs `action` on the watchdog thread at `deadline`, unless cancelled first.
    @discardableResult
    public func schedule(at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) -> TimerID {
        let (id, start) = state.withLock(visibleTo: self) { state in
            state.nextID &+= 1
            state.timers.append(Timer(id: state.nextID, deadline: deadline, action: action))
            defer { state.started = true }
            return (state.nextID, !state.started)
        }
        if start {
            let thread = Thread { [self] in loop() }
            thread.name = "session-bench watchdog"
            thread.start()
        }
        condition.lock()
        condition.signal()
        condition.unlock()
        return TimerID(raw: id)
    }

    /// Cancels a timer that has not fired yet.
    public func cancel(_ timer: TimerID) {
        state.withLock(visibleTo: self) { $0.timers.removeAll { $0.id == timer.raw } }
    }

    private func loop() {
        condition.lock()
        while true {
            // Due timers and the next deadline are read with the condition's lock held, so a
            // timer scheduled meanwhile (its signal needs that lock) cannot be missed.
            let now = ContinuousClock.now
            let (due, next) = state.withLock(visibleTo: self) { state -> ([Timer], ContinuousClock.Instant?) in
                let due = state.timers.filter { $0.deadline <= now }
                state.timers.removeAll { $0.deadline <= now }
                return (due, state.timers.map(\.deadline).min())
            }
            if !due.isEmpty {
                condition.unlock()
                for timer in due { timer.action() }
                condition.lock()
                continue
            }
            if let next {
                let wait = (next - ContinuousClock.now).seconds
                if wait > 0 { _ = condition.wait(until: Date(timeIntervalSinceNow: wait)) }
                continue
            }
            // Nothing to keep: after a second idle the thread ends (the next `schedule` starts
            // another), so it never keeps a process alive that is otherwise done.
            _ = condition.wait(until: Date(timeIntervalSinceNow: 1))
            let done = state.withLock(visibleTo: self) { state -> Bool in
                guard state.timers.isEmpty else { return false }
                state.started = false
                return true
            }
            if done {
                condition.unlock()
                return
            }
        }
    }
}

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
    static let spinningChances = 20

    init(grace: Duration, onStarved: @escaping @Sendable (Starvation) -> Void) {
        self.grace = grace
        self.onStarved = onStarved
    }

    /// The coordinator expects to be back by `deadline` (grace is added here).
    func expectBack(by deadline: ContinuousClock.Instant, describe: @escaping @Sendable () -> Starvation) {
        let priority = Task.currentPriority
        armed.withLock(visibleTo: self) { armed in
            armed.generation &+= 1
            schedule(&armed, at: deadline + grace, generation: armed.generation, priority: priority, spinning: 0, describe: describe)
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
        _ armed: inout Armed, at due: ContinuousClock.Instant, generation: UInt64, priority: TaskPriority, spinning: Int,
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
        let window = Self.probeWindow
        let timer = Watchdog.shared.schedule(at: .now + window) { [self] in
            let alive = ran.flag.load(ordering: .acquiring)
            let busy = ResourceUsage.cpuSeconds - cpuBefore > 0.2 * window.seconds
            let starved = !alive && (!busy || spinning >= Self.spinningChances)
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
