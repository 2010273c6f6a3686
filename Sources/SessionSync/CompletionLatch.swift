import Synchronization

/// Collects the results of `expected` tasks and lets a coordinator wait for them with a
/// deadline, so a task stuck in a store is reported instead of hanging the tool. Waiting
/// suspends rather than polls, so the coordinator allocates (and runs) nothing while callers work.
public final class CompletionLatch<Value: Sendable>: Sendable {
    private struct State {
        var results: [Value] = []
        var entered = 0
        var waitingForResults: Waiter<[Value]?>?
        var waitingForEntry: Waiter<Bool>?
        // Each wait's number, and the last whose deadline passed: a wait that registers after
        // its own deadline still times out, while a later wait (a patient caller's extension)
        // waits until its own.
        var waits: UInt64 = 0
        var resultsExpired: UInt64 = 0
        var entryExpired: UInt64 = 0
    }

    private struct Waiter<T: Sendable> {
        var wait: UInt64
        var continuation: CheckedContinuation<T, Never>
    }

    private let expected: Int
    private let state: Mutex<State>

    public init(expected: Int) {
        self.expected = expected
        var initial = State()
        initial.results.reserveCapacity(expected)
        state = Mutex(initial)
    }

    /// A task is about to make its call.
    public func enter() {
        let waiter = state.withLock(visibleTo: self) { state -> CheckedContinuation<Bool, Never>? in
            state.entered += 1
            guard state.entered == expected else { return nil }
            defer { state.waitingForEntry = nil }
            return state.waitingForEntry?.continuation
        }
        waiter?.resume(returning: true)
    }

    /// A task finished with `value`.
    public func finish(_ value: Value) {
        let (waiter, results) = state.withLock(visibleTo: self) {
            state -> (CheckedContinuation<[Value]?, Never>?, [Value]) in
            state.results.append(value)
            guard state.results.count == expected, let waiter = state.waitingForResults else { return (nil, []) }
            state.waitingForResults = nil
            return (waiter.continuation, state.results)
        }
        waiter?.resume(returning: results)
    }

    public var enteredCount: Int { state.withLock(visibleTo: self) { $0.entered } }
    public var finishedCount: Int { state.withLock(visibleTo: self) { $0.results.count } }
    /// The results that have arrived so far.
    public var partialResults: [Value] { state.withLock(visibleTo: self) { $0.results } }
    public var expectedCount: Int { expected }

    /// Every result, or `nil` if not all arrived before `deadline`.
    public func wait(until deadline: ContinuousClock.Instant) async -> [Value]? {
        let wait = nextWait()
        return await withDeadline(deadline, timedOut: nil) { continuation in
            state.withLock(visibleTo: self) { state in
                if state.results.count == expected { return .now(state.results) }
                if state.resultsExpired == wait { return .now(nil) }
                state.waitingForResults = Waiter(wait: wait, continuation: continuation)
                return .later
            }
        } expire: {
            self.state.withLock(visibleTo: self) { state in
                state.resultsExpired = wait
                guard let waiter = state.waitingForResults, waiter.wait == wait else { return nil }
                state.waitingForResults = nil
                return waiter.continuation
            }
        }
    }

    /// Whether every task entered before `deadline`.
    public func waitForEntry(until deadline: ContinuousClock.Instant) async -> Bool {
        let wait = nextWait()
        return await withDeadline(deadline, timedOut: false) { continuation in
            state.withLock(visibleTo: self) { state in
                if state.entered == expected { return .now(true) }
                if state.entryExpired == wait { return .now(false) }
                state.waitingForEntry = Waiter(wait: wait, continuation: continuation)
                return .later
            }
        } expire: {
            self.state.withLock(visibleTo: self) { state in
                state.entryExpired = wait
                guard let waiter = state.waitingForEntry, waiter.wait == wait else { return nil }
                state.waitingForEntry = nil
                return waiter.continuation
            }
        }
    }

    private func nextWait() -> UInt64 {
        state.withLock(visibleTo: self) { state in
            state.waits += 1
            return state.waits
        }
    }

    private enum Registration<T> {
        case now(T)
        case later
    }

    /// Suspends until `register`'s continuation is resumed, or resumes it with `timedOut`
    /// at `deadline` if `expire` still finds it waiting.
    private func withDeadline<T: Sendable>(
        _ deadline: ContinuousClock.Instant, timedOut: T,
        register: (CheckedContinuation<T, Never>) -> Registration<T>,
        expire: @escaping @Sendable () -> CheckedContinuation<T, Never>?
    ) async -> T {
        // The deadline is kept by the watchdog thread, not a task: a store that blocks the
        // cooperative pool's threads must not be able to stop it from firing.
        let timer = Watchdog.shared.schedule(at: deadline) { expire()?.resume(returning: timedOut) }
        defer { Watchdog.shared.cancel(timer) }
        return await withCheckedContinuation { continuation in
            if case .now(let value) = register(continuation) { continuation.resume(returning: value) }
        }
    }
}
