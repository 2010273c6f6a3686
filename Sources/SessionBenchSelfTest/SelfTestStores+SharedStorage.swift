import SessionContract
import SessionStores
import SessionSync
import Synchronization

extension SelfTestStores {
    /// The mutex store over storage wrappers an app puts between its instances and the one saved
    /// session they share (an app and its extension over one Keychain item): each breaks one
    /// sentence of ``SharedTokenStorage``, and `shared-storage` must name it.
    static let sharedStorage: [StoreDescriptor] = [
        wrapped(
            "shared-lock-per-instance",
            "the mutex store whose refresh lock belongs to its own storage object: instances over one saved session "
                + "refresh at once and the second presents a rotated refresh token (self-test)"
        ) { OwnLock(base: $0) },
        wrapped(
            "shared-cached-load",
            "the mutex store over a storage object that caches what it last read or wrote: in its turn it never sees "
                + "the grant another instance saved (self-test)"
        ) { CachedLoads(base: $0) },
        wrapped(
            "shared-saves-in-background",
            "the mutex store over a shared storage whose writes are each handed to a Task: the next holder's turn "
                + "may read the grant before it (self-test)"
        ) { BackgroundSharedWrites(base: $0) },
        wrapped(
            "shared-sign-out-local",
            "the mutex store whose sign-out forgets the session in its own storage object only: the other "
                + "instances go on refreshing the ended session (self-test)"
        ) { LocalClear(base: $0) },
    ]

    /// The mutex store, declared to share its storage, over `wrap(storage)`.
    private static func wrapped(
        _ name: String, _ summary: String, _ wrap: @escaping @Sendable (any TokenStorage) -> any SharedTokenStorage
    ) -> StoreDescriptor {
        StoreDescriptor(
            name: name, summary: summary, isReferenceBroken: true, offersSynchronousRead: true, persistsSession: true,
            sharesStorage: true
        ) { configuration in
            var wrapped = configuration
            wrapped.storage = configuration.storage.map(wrap)
            return MutexStore(configuration: wrapped)
        }
    }
}

/// Turns the storage's own refresh lock into one per storage object: an `NSLock` in the
/// Keychain wrapper, which each instance makes for itself.
private final class OwnLock: SharedTokenStorage {
    let base: any TokenStorage
    let turns = Turnstile()

    init(base: any TokenStorage) { self.base = base }

    func load() throws(StorageError) -> TokenGrant? { try base.load() }
    func save(_ grant: TokenGrant) throws(StorageError) { try base.save(grant) }
    func clear() throws(StorageError) { try base.clear() }
    func whileRefreshing<R>(_ body: () async -> R) async throws(StorageError) -> R { await turns.run(body) }
}

/// The shared storage's turns, with a cache in front of its reads: what this object last read or
/// wrote is what it reads again.
private final class CachedLoads: SharedTokenStorage {
    let base: any TokenStorage
    /// `nil`: nothing read yet; `.some(nil)`: no session.
    let cache = Mutex<TokenGrant??>(nil)

    init(base: any TokenStorage) { self.base = base }

    func load() throws(StorageError) -> TokenGrant? {
        if let cached = cache.withLock({ $0 }) { return cached }
        let grant = try base.load()
        cache.withLock { $0 = .some(grant) }
        return grant
    }

    func save(_ grant: TokenGrant) throws(StorageError) {
        try base.save(grant)
        cache.withLock { $0 = .some(grant) }
    }

    func clear() throws(StorageError) {
        try base.clear()
        cache.withLock { $0 = .some(nil) }
    }

    func whileRefreshing<R>(_ body: () async -> R) async throws(StorageError) -> R {
        try await turns(of: base, body)
    }
}

/// The shared storage's turns and reads, with each write handed to a task of its own
/// (``BackgroundWrites``).
private final class BackgroundSharedWrites: SharedTokenStorage {
    let writes: BackgroundWrites

    init(base: any TokenStorage) { writes = BackgroundWrites(base: base) }

    func load() throws(StorageError) -> TokenGrant? { try writes.load() }
    func save(_ grant: TokenGrant) throws(StorageError) { try writes.save(grant) }
    func clear() throws(StorageError) { try writes.clear() }

    func whileRefreshing<R>(_ body: () async -> R) async throws(StorageError) -> R {
        try await turns(of: writes.base, body)
    }
}

/// The shared storage, but a clear only hides the session from this storage object.
private final class LocalClear: SharedTokenStorage {
    let base: any TokenStorage
    let cleared = Mutex(false)

    init(base: any TokenStorage) { self.base = base }

    func load() throws(StorageError) -> TokenGrant? { cleared.withLock { $0 } ? nil : try base.load() }

    func save(_ grant: TokenGrant) throws(StorageError) {
        try base.save(grant)
        cleared.withLock { $0 = false }
    }

    func clear() throws(StorageError) { cleared.withLock { $0 = true } }

    func whileRefreshing<R>(_ body: () async -> R) async throws(StorageError) -> R {
        try await turns(of: base, body)
    }
}

/// `base`'s own turns when it has them; at once when it is not shared.
private func turns<R>(of base: any TokenStorage, _ body: () async -> R) async throws(StorageError) -> R {
    guard let shared = base as? any SharedTokenStorage else { return await body() }
    return try await shared.whileRefreshing(body)
}
