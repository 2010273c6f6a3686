import SessionContract
import SessionSync
import Synchronization

/// Reads with no shared write at all: each reader thread keeps its own copy of the token
/// and checks it against a published version with one plain atomic load.
///
/// - Guarantee: the full contract. Every change to what a reader may return — refresh
///   started or finished, sign-in, sign-out — bumps the lifecycle's version and publishes it
///   (release store) before the `Mutex` is released; a reader whose copy carries an older
///   version takes the locked path. So sign-out is still a fence: once it returns, every
///   reader's next load sees the new version. Waiting, refresh and sign-out are the shared
///   ``TokenLifecycle`` under a `Mutex`, exactly as in ``MutexStore``.
/// - Cost model: a fast-path read is a thread-local load, an acquire load of a line nobody
///   writes between token changes, a clock read, one integer compare against the copy's
///   precomputed fresh-until instant, and a retain of the reader's own token copy — no lock
///   word, no shared reference count, no allocation. A thread's first read after each change
///   copies the token (one allocation) and takes the lock once.
/// - Known weakness: one cached token per thread, so a thread alternating between two stores
///   misses every time; memory per reading thread is one token copy.
public typealias LockFreeReadStore = LockedSessionStore<LockFreeReadGuard>

/// A `Mutex`-guarded lifecycle that publishes its version, so that reads can be answered
/// from per-thread copies without touching the lock.
public final class LockFreeReadGuard: LifecycleGuard {
    private let state: Mutex<TokenLifecycle<TokenWaiter>>
    private let published: Atomic<UInt64>
    private let guardID: UInt64

    public init(_ lifecycle: TokenLifecycle<TokenWaiter>) {
        published = Atomic(lifecycle.version)
        state = Mutex(lifecycle)
        guardID = nextPublisherID.add(1, ordering: .relaxed).newValue
    }

    public func withExclusiveAccess<R: Sendable>(_ body: (inout TokenLifecycle<TokenWaiter>) -> R) -> R {
        state.withLock(visibleTo: self) { lifecycle in
            let result = body(&lifecycle)
            if lifecycle.version != published.load(ordering: .relaxed) {
                published.store(lifecycle.version, ordering: .releasing)
            }
            return result
        }
    }

    public func freshToken(at now: TokenInstant) -> AccessToken? {
        ReaderSlot.read(publisher: guardID, published: published.load(ordering: .acquiring), at: now) {
            // Miss: read under the lock.
            let (version, skew, fresh) = withSharedAccess { ($0.version, $0.skewNanoseconds, $0.freshToken(at: now)) }
            return fresh.map { (version, $0, $0.freshUntil(skew: skew)) }
        }
    }
}
