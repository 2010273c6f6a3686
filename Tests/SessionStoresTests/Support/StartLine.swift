import SessionSync
import Synchronization

/// Holds `count` tasks until all have arrived, then lets them go together, so a storm of
/// callers really overlaps instead of trickling in as tasks are created.
final class StartLine: Sendable {
    private struct State {
        var arrived = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let count: Int
    private let state = Mutex(State())

    init(count: Int) { self.count = count }

    func arriveAndWait() async {
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

/// Polls `condition` until it holds, failing after `timeout` rather than hanging the suite.
func eventually(
    _ what: String, timeout: Duration = .seconds(10), _ condition: @Sendable () async -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while !(await condition()) {
        guard ContinuousClock.now < deadline else { throw TimedOut(what: what) }
        try await Task.sleep(for: .milliseconds(1))
    }
}

struct TimedOut: Error, CustomStringConvertible {
    let what: String
    var description: String { "timed out waiting for \(what)" }
}

/// A counter tasks bump as they enter a call.
final class Counter: Sendable {
    private let value = Atomic(0)
    func increment() { value.add(1, ordering: .relaxed) }
    var count: Int { value.load(ordering: .relaxed) }
}
