import Dispatch
import SessionContract

/// A store whose state lives on a serial `DispatchQueue` (the Lume `UserSession` pattern).
///
/// - Guarantee: the full contract, through the shared ``TokenLifecycle``; every access is a
///   `queue.sync`, so accesses are serialized; waiting continuations are parked in state that
///   only the queue touches.
/// - Cost model: each access is a `dispatch_sync` — a queue-ownership handoff, far dearer
///   than a lock on Linux, where it cannot borrow the caller's thread as cheaply as on
///   Darwin. The mechanism allocates: libdispatch on Linux allocates for each `sync` (3.00
///   allocations per read in `steady-reads`), which no store built on a queue can avoid.
/// - Known weakness: readers serialize behind each other; `Sendable` rests on the queue
///   discipline (`@unchecked`).
public typealias SerialQueueStore = LockedSessionStore<SerialQueueGuard>

/// The lifecycle confined to a serial queue.
public final class SerialQueueGuard: LifecycleGuard, @unchecked Sendable {
    // SAFETY: `lifecycle` is touched only inside `queue.sync`, and the queue is serial.
    private let queue = DispatchQueue(label: "session-bench.serial-queue-store")
    private var lifecycle: TokenLifecycle<TokenWaiter>

    public init(_ lifecycle: TokenLifecycle<TokenWaiter>) { self.lifecycle = lifecycle }

    public func withExclusiveAccess<R: Sendable>(_ body: (inout TokenLifecycle<TokenWaiter>) -> R) -> R {
        queue.sync { body(&lifecycle) }
    }
}
