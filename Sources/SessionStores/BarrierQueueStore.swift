import Dispatch
import SessionContract

/// A store on a concurrent `DispatchQueue`: reads run together, writes are barriers
/// (the common iOS reader/writer idiom).
///
/// - Guarantee: the full contract, through the shared ``TokenLifecycle``. Reads use
///   `queue.sync`, every mutation `queue.sync(flags: .barrier)`, so no read overlaps a write.
/// - Cost model: a `dispatch_sync` per read, cheaper than the serial queue only when several
///   readers actually overlap; a barrier drains every reader before it runs. Like every
///   `dispatch_sync` on Linux it allocates (3.00 allocations per read in `steady-reads`).
/// - Known weakness: the read path still writes the queue's shared state, so it does not
///   scale like a lock-free read; `Sendable` rests on the barrier discipline (`@unchecked`).
public typealias BarrierQueueStore = LockedSessionStore<BarrierQueueGuard>

/// The lifecycle on a concurrent queue with barrier writes.
public final class BarrierQueueGuard: LifecycleGuard, @unchecked Sendable {
    // SAFETY: `lifecycle` is mutated only in barrier blocks, which run alone on the queue;
    // plain blocks only read it.
    private let queue = DispatchQueue(label: "session-bench.barrier-queue-store", attributes: .concurrent)
    private var lifecycle: TokenLifecycle<TokenWaiter>

    public init(_ lifecycle: TokenLifecycle<TokenWaiter>) { self.lifecycle = lifecycle }

    public func withExclusiveAccess<R: Sendable>(_ body: (inout TokenLifecycle<TokenWaiter>) -> R) -> R {
        queue.sync(flags: .barrier) { body(&lifecycle) }
    }

    public func withSharedAccess<R: Sendable>(_ body: (borrowing TokenLifecycle<TokenWaiter>) -> R) -> R {
        queue.sync { body(lifecycle) }
    }
}
