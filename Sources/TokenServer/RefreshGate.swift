import SessionSync
import Synchronization

/// A turnstile in front of the server's refresh handling, for tests and scenarios that need
/// a refresh to be *in flight* at a chosen moment: hold it, let callers pile up, act, release.
public final class RefreshGate: Sendable {
    private struct State {
        var isHeld = false
        var waiting: [CheckedContinuation<Void, Never>] = []
        var arrivals = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// From now on, refresh calls wait at the gate.
    public func hold() { state.withLock(visibleTo: self) { $0.isHeld = true } }

    /// Lets every waiting call through and stops holding new ones.
    public func release() {
        let waiting = state.withLock(visibleTo: self) { state in
            state.isHeld = false
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Calls waiting at the gate now.
    public var waitingCount: Int { state.withLock(visibleTo: self) { $0.waiting.count } }

    /// Calls that have reached the gate since the server started, held or not.
    public var arrivals: Int { state.withLock(visibleTo: self) { $0.arrivals } }

    func pass() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let passNow = state.withLock(visibleTo: self) { state in
                state.arrivals += 1
                if state.isHeld { state.waiting.append(continuation) }
                return !state.isHeld
            }
            if passNow { continuation.resume() }
        }
    }
}
