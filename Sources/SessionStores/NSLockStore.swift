import Foundation
import SessionContract

/// A store guarded by Foundation's `NSLock` — the classic, pre-Swift-concurrency answer.
///
/// - Guarantee: the full contract, through the shared ``TokenLifecycle``. The lock is never
///   held across an `await`: the refresh runs outside it.
/// - Cost model: an uncontended read is an Objective-C-style method call into a
///   `pthread_mutex_t` lock and unlock, plus a clock read; no allocation.
/// - Known weakness: `Sendable` rests on a promise (`@unchecked`), not the compiler; readers
///   contend on the mutex's cache line like any lock.
public typealias NSLockStore = LockedSessionStore<NSLockGuard>

/// The lifecycle behind an `NSLock`.
public final class NSLockGuard: LifecycleGuard, @unchecked Sendable {
    // SAFETY: `lifecycle` is read and written only between `lock.lock()` and `lock.unlock()`.
    private let lock = NSLock()
    private var lifecycle: TokenLifecycle<TokenWaiter>

    public init(_ lifecycle: TokenLifecycle<TokenWaiter>) { self.lifecycle = lifecycle }

    public func withExclusiveAccess<R: Sendable>(_ body: (inout TokenLifecycle<TokenWaiter>) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&lifecycle)
    }
}
