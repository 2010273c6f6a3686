#if canImport(Glibc)
import SessionSync
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SessionContract
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
/// - Cost model: a fast-path read is a thread-local lookup, an acquire load of a line
///   nobody writes between token changes, a clock read, and a retain of the reader's own
///   token copy — no lock word, no shared reference count, no allocation. A thread's first
///   read after each change copies the token (one allocation) and takes the lock once.
/// - Known weakness: one cached token per thread, so a thread alternating between two stores
///   misses every time; memory per reading thread is one token copy.
public final class LockFreeReadStore: SynchronousTokenReading {
    private let locked: LockedSessionStore<PublishingMutexGuard>
    private let storeID: UInt64
    private let skew: Duration

    public init(configuration: SessionStoreConfiguration) {
        locked = LockedSessionStore(configuration: configuration)
        storeID = nextStoreID.add(1, ordering: .relaxed).newValue
        skew = configuration.refreshSkew
    }

    public func currentToken() -> AccessToken? {
        let version = locked.lifecycle.published.load(ordering: .acquiring)
        let now = locked.clock.now()
        let slot = ReaderSlot.current
        if slot.storeID == storeID, slot.version == version, let token = slot.token,
            token.isFresh(at: now, margin: skew)
        {
            return token
        }
        // Miss: read under the lock, keep a copy of our own for next time.
        let (lockedVersion, fresh) = locked.lifecycle.withSharedAccess { ($0.version, $0.freshToken(at: now)) }
        guard let fresh else { return nil }
        let copy = fresh.unsharedCopy()
        slot.storeID = storeID
        slot.version = lockedVersion
        slot.token = copy
        return copy
    }

    public func validToken() async throws(SessionError) -> AccessToken {
        if let token = currentToken() { return token }
        return try await locked.validToken()
    }

    public func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        // A 401 for an older token is answered from the reader's own copy, like a read.
        if let current = currentToken(), TokenLifecycle<TokenWaiter>.isStale(token, comparedWith: current) {
            return current
        }
        return try await locked.tokenRejected(token)
    }

    public func signIn(_ credentials: Credentials) async throws(SessionError) {
        try await locked.signIn(credentials)
    }

    public func signOut() async { await locked.signOut() }
}

/// A `Mutex`-guarded lifecycle that publishes its version for lock-free readers.
public final class PublishingMutexGuard: LifecycleGuard {
    private let state: Mutex<TokenLifecycle<TokenWaiter>>
    let published: Atomic<UInt64>

    public init(_ lifecycle: TokenLifecycle<TokenWaiter>) {
        published = Atomic(lifecycle.version)
        state = Mutex(lifecycle)
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
}

private let nextStoreID = Atomic<UInt64>(0)

/// One per thread: the last token this thread read from a `LockFreeReadStore`.
private final class ReaderSlot {
    var storeID: UInt64 = 0
    var version: UInt64 = 0
    var token: AccessToken?

    static var current: ReaderSlot {
        if let raw = pthread_getspecific(readerSlotKey) {
            return Unmanaged<ReaderSlot>.fromOpaque(raw).takeUnretainedValue()
        }
        let slot = ReaderSlot()
        pthread_setspecific(readerSlotKey, Unmanaged.passRetained(slot).toOpaque())
        return slot
    }
}

private let readerSlotKey: pthread_key_t = {
    var key = pthread_key_t()
    let status = pthread_key_create(&key) { raw in
        guard let raw else { return }
        Unmanaged<ReaderSlot>.fromOpaque(raw).release()
    }
    precondition(status == 0, "pthread_key_create failed (\(status))")
    return key
}()
