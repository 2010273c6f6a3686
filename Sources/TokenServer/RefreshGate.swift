import SessionSync
import Synchronization

/// A turnstile in front of the server's refresh handling, for tests and scenarios that need
/// a refresh to be *in flight* at a chosen moment: hold it, let callers pile up, act, release.
///
/// A call whose task is cancelled while it waits at the gate leaves it at once, as a client
/// whose connection was dropped: the server never acts on it.
public final class RefreshGate: Sendable {
    private struct State {
        var isHeld = false
        var waiting: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        var nextID: UInt64 = 0
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
            defer { state.waiting = [:] }
            return state.waiting.sorted { $0.key < $1.key }.map(\.value)
        }
        for continuation in waiting { continuation.resume(returning: true) }
    }

    /// Stops holding new calls, leaving the ones waiting held until ``release()``: the calls
    /// after them overtake them.
    public func admitNew() { state.withLock(visibleTo: self) { $0.isHeld = false } }

    /// Lets the call that has waited longest through, holding the others (and new ones).
    public func releaseFirst() {
        let first = state.withLock(visibleTo: self) { state -> CheckedContinuation<Bool, Never>? in
            guard let id = state.waiting.keys.min() else { return nil }
            return state.waiting.removeValue(forKey: id)
        }
        first?.resume(returning: true)
    }

    /// Calls waiting at the gate now.
    public var waitingCount: Int { state.withLock(visibleTo: self) { $0.waiting.count } }

    /// Calls that have reached the gate since the server started, held or not.
    public var arrivals: Int { state.withLock(visibleTo: self) { $0.arrivals } }

    /// Whether the gate holds new calls now.
    public var isHeld: Bool { state.withLock(visibleTo: self) { $0.isHeld } }

    /// Waits while the gate is held. `false` when the calling task was cancelled first.
    func pass() async -> Bool {
        let id = state.withLock(visibleTo: self) { state in
            state.nextID &+= 1
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let answer: Bool? = state.withLock(visibleTo: self) { state in
                    state.arrivals += 1
                    if Task.isCancelled { return false }
                    guard state.isHeld else { return true }
                    state.waiting[id] = continuation
                    return nil
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            let continuation = state.withLock(visibleTo: self) { $0.waiting.removeValue(forKey: id) }
            continuation?.resume(returning: false)
        }
    }
}
