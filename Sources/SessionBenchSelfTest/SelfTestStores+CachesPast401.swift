import SessionContract
import SessionStores
import Synchronization

extension SelfTestStores {
    /// A cache in front of a correct store that only the token's own expiry empties: a 401
    /// rotates the session underneath it, and readers are handed the rejected token until it
    /// nears its expiry. Expiry storms refresh through it correctly, so only a read of a fresh
    /// token after a 401 storm shows it.
    static let cachesPast401 = StoreDescriptor(
        name: "caches-past-401",
        summary:
            "the mutex store behind a cache of the last token read, emptied only near its expiry: after a 401 its readers keep the rejected token (self-test)",
        isReferenceBroken: true
    ) { CachesPast401Store(configuration: $0) }
}

private final class CachesPast401Store: SessionStore {
    private let inner: MutexStore
    private let clock: TokenClock
    private let skew: Duration
    private let cached = Mutex<AccessToken?>(nil)

    init(configuration: SessionStoreConfiguration) {
        inner = MutexStore(configuration: configuration)
        clock = configuration.clock
        skew = configuration.refreshSkew
    }

    func validToken() async throws(SessionError) -> AccessToken {
        if let token = cached.withLock({ $0 }), token.isFresh(at: clock.now(), margin: skew) { return token }
        let token = try await inner.validToken()
        cached.withLock { $0 = token }
        return token
    }

    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        try await inner.tokenRejected(token)
    }

    func signIn(_ credentials: Credentials) async throws(SessionError) {
        cached.withLock { $0 = nil }
        try await inner.signIn(credentials)
    }

    func signOut() async {
        cached.withLock { $0 = nil }
        await inner.signOut()
    }
}
