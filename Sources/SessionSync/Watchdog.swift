import Foundation
import Synchronization

/// Deadlines kept by an OS thread of their own, outside Swift's cooperative pool.
///
/// The harness's coordinator and the store's callers share the cooperative pool. A store
/// that blocks pool threads (a semaphore wait or a lock held across an `await`, the common
/// "make it single-flight with a semaphore" pattern) can take every one of them: then no
/// task runs again, a timer built from `Task.sleep` never fires, and the coordinator never
/// gets to report the hang. Deadlines kept here still fire: they resume waiting
/// continuations from this thread, and a starvation watch that the coordinator does not
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
                let (seconds, attoseconds) = (next - ContinuousClock.now).components
                let wait = TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
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
