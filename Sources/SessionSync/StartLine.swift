import Synchronization

/// Holds `count` tasks until all have arrived, then lets them go together, so a storm of
/// callers really overlaps instead of trickling in as tasks are created.
public final class StartLine: Sendable {
    private struct State {
        var arrived = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let count: Int
    private let state = Mutex(State())

    public init(count: Int) { self.count = count }

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
