import SessionContract
import SessionSync
import Synchronization

/// Hands a store's state changes to every subscriber, in the order they happened.
///
/// A store publishes each change with the version its state had after it (a number that moves on
/// every change, taken under the store's own guard). Changes are published after the guard is
/// released, so two can arrive out of order; the broadcaster drops any older than the last one
/// it handed out. Every subscriber therefore sees versions rising, and its last state is the
/// store's last. Subscribers are yielded to under the broadcaster's own lock, so no two
/// publishers interleave their yields; a subscriber whose stream has ended is dropped at the
/// next change. (Not from the stream's termination handler: that runs while the runtime holds
/// the cancelled subscriber task's status lock, which a yield under this lock waits for — a
/// subscriber cancelled during a publish deadlocked both.)
///
/// - Cost model: a publish that changes nothing (a caller joining a refresh) is one atomic load;
///   a change is one lock and one yield per subscriber. A subscriber's buffer is unbounded: it
///   holds the changes a slow reader has not read yet.
public final class StateBroadcaster: Sendable {
    private struct State {
        var version: UInt64
        var current: SessionState
        var subscribers: [UInt64: AsyncStream<SessionState>.Continuation] = [:]
        var nextID: UInt64 = 0
    }

    private let state: Mutex<State>
    private let published: Atomic<UInt64>

    public init(_ initial: SessionState = .signedOut, version: UInt64 = 0) {
        state = Mutex(State(version: version, current: initial))
        published = Atomic(version)
    }

    /// Publishes `newState`, the store's state at `version`, unless a later version already was.
    public func publish(_ newState: SessionState, version: UInt64) {
        guard version > published.load(ordering: .acquiring) else { return }
        state.withLock(visibleTo: self) { state in
            guard version > state.version else { return }
            state.version = version
            published.store(version, ordering: .releasing)
            guard newState != state.current else { return }
            state.current = newState
            var ended: [UInt64] = []
            for (id, subscriber) in state.subscribers {
                if case .terminated = subscriber.yield(newState) { ended.append(id) }
            }
            for id in ended { state.subscribers.removeValue(forKey: id) }
        }
    }

    /// A new subscriber: the current state first, then every later change.
    public func subscribe() -> AsyncStream<SessionState> {
        let (stream, continuation) = AsyncStream.makeStream(of: SessionState.self, bufferingPolicy: .unbounded)
        let id = state.withLock(visibleTo: self) { state in
            state.nextID &+= 1
            return state.nextID
        }
        state.withLock(visibleTo: self) { state in
            state.subscribers[id] = continuation
            continuation.yield(state.current)
        }
        return stream
    }

    deinit {
        let subscribers = state.withLock(visibleTo: self) { state in
            defer { state.subscribers = [:] }
            return state.subscribers
        }
        for subscriber in subscribers.values { subscriber.finish() }
    }
}
