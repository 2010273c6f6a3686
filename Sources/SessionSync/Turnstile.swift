import Synchronization

/// Turns taken by suspending: one body at a time, in arrival order. A waiter parks its task, not
/// its thread, so it runs under the controlled scheduler too.
public final class Turnstile: Sendable {
    private struct State {
        var busy = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    public init() {}

    public func run<R>(_ body: () async -> R) async -> R {
        await withCheckedContinuation { (turn: CheckedContinuation<Void, Never>) in
            let now = state.withLock(visibleTo: self) { state in
                if state.busy {
                    state.waiting.append(turn)
                    return false
                }
                state.busy = true
                return true
            }
            if now { turn.resume() }
        }
        let result = await body()
        let next = state.withLock(visibleTo: self) { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.busy = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
        return result
    }
}
