import SessionSync
import SessionContract
import Synchronization

/// A store guarded by the standard library's `Synchronization.Mutex`.
///
/// - Guarantee: single-flight refresh and every other invariant of the contract, through the
///   shared ``TokenLifecycle``; `Sendable` checked by the compiler, no `@unchecked`.
/// - Cost model: an uncontended read is one futex-word compare-and-swap, a clock read and
///   a release store; no allocation.
/// - Known weakness: every reader writes the lock word, so readers on different cores
///   contend on one cache line even when nobody writes the token.
public typealias MutexStore = LockedSessionStore<MutexGuard>

/// The lifecycle in a `Mutex`.
public final class MutexGuard: LifecycleGuard {
    private let state: Mutex<TokenLifecycle<TokenWaiter>>

    public init(_ lifecycle: TokenLifecycle<TokenWaiter>) { state = Mutex(lifecycle) }

    public func withExclusiveAccess<R: Sendable>(_ body: (inout TokenLifecycle<TokenWaiter>) -> R) -> R {
        state.withLock(visibleTo: self) { body(&$0) }
    }
}
