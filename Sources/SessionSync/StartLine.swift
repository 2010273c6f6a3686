import Synchronization

/// Holds `count` tasks until all have arrived, then lets them go together, so a storm of
/// callers really overlaps instead of trickling in as tasks are created.
public final class StartLine: Sendable {
    @usableFromInline
    struct State {
        @usableFromInline var arrived = 0
        @usableFromInline var waiting: [CheckedContinuation<Void, Never>] = []
        @usableFromInline init() {}
    }

    @usableFromInline let count: Int
    @usableFromInline let state = Mutex(State())

    public init(count: Int) { self.count = count }

    /// Inlined into the caller, as it was when the harness kept it: the storms' per-waiter
    /// figures compare call stacks whose depth decides how many task-allocator slabs they take.
    @inlinable
    public func arriveAndWait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let release: [CheckedContinuation<Void, Never>] = state.withLock(visibleTo: self) { state in
                state.arrived += 1
                state.waiting.append(continuation)
                guard state.arrived == count else { return [] }
                defer { state.waiting = [] }
                return state.waiting
            }
            for waiter in release { waiter.resume() }
        }
    }
}
