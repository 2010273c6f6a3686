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
        while true {
            let now = ContinuousClock.now
            let (due, next) = state.withLock(visibleTo: self) { state -> ([Timer], ContinuousClock.Instant?) in
                let due = state.timers.filter { $0.deadline <= now }
                state.timers.removeAll { $0.deadline <= now }
                return (due, state.timers.map(\.deadline).min())
            }
            for timer in due { timer.action() }
            condition.lock()
            if let next {
                let wait = (next - ContinuousClock.now).seconds
                if wait > 0 { _ = condition.wait(until: Date(timeIntervalSinceNow: wait)) }
            } else {
                condition.wait()
            }
            condition.unlock()
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
/// grace for a busy machine) and what it is waiting for; when it is not back by then, the
/// watchdog thread calls `onStarved` once, with that description. The coordinator may never
/// run again after that, so `onStarved` must do whatever reporting is left (the measuring
/// process writes its verdict and exits).
final class StarvationWatch: Sendable {
    private struct Armed {
        var generation: UInt64 = 0
        var timer: Watchdog.TimerID?
        var fired = false
    }

    private let armed = Mutex(Armed())
    private let onStarved: @Sendable (Starvation) -> Void
    let grace: Duration

    init(grace: Duration, onStarved: @escaping @Sendable (Starvation) -> Void) {
        self.grace = grace
        self.onStarved = onStarved
    }

    /// The coordinator expects to be back by `deadline` (grace is added here).
    func expectBack(by deadline: ContinuousClock.Instant, describe: @escaping @Sendable () -> Starvation) {
        let due = deadline + grace
        armed.withLock(visibleTo: self) { armed in
            if let timer = armed.timer { Watchdog.shared.cancel(timer) }
            armed.generation &+= 1
            let generation = armed.generation
            armed.timer = Watchdog.shared.schedule(at: due) { [self] in
                let fire = self.armed.withLock(visibleTo: self) { armed -> Bool in
                    guard armed.generation == generation, !armed.fired else { return false }
                    armed.fired = true
                    return true
                }
                if fire { onStarved(describe()) }
            }
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
}
