import Foundation
import SessionContract
import SessionStores
import Synchronization

// Stores with one realistic mistake each against a promise of the contract that only the model
// judges (`ContractJudge`): each passed every check of the list-based oracle before it.

/// A wrapped `MutexStore` that also reads synchronously, for mistakes on that path.
class WrappedReadingStore: WrappedStore, SynchronousTokenReading, @unchecked Sendable {
    func currentToken() -> AccessToken? { inner.currentToken() }

    override class func descriptor(_ name: String) -> StoreDescriptor {
        StoreDescriptor(name: name, summary: "wrong on purpose", isReferenceBroken: true, offersSynchronousRead: true) {
            Self(configuration: $0)
        }
    }
}

/// I26: keeps the token's value and its metadata in two caches, and on a refresh publishes the
/// new generation and expiry, writes the grant to the keychain, and only then the new value: a
/// reader in between gets the old value under the new generation.
final class SplitCacheStore: WrappedStore, @unchecked Sendable {
    private struct Meta { var subject: Subject; var generation: UInt64; var expiresAt: TokenInstant }
    private let value = Mutex<String?>(nil)
    private let meta = Mutex<Meta?>(nil)

    private func cached() -> AccessToken? {
        guard let meta = meta.withLock({ $0 }), let value = value.withLock({ $0 }),
            meta.expiresAt > configuration.clock.now() + configuration.refreshSkew
        else { return nil }
        return AccessToken(value: value, subject: meta.subject, generation: meta.generation, expiresAt: meta.expiresAt)
    }

    /// The first caller back from a refresh publishes its token: the new metadata, then the
    /// keychain write, then the value.
    private func publish(_ token: AccessToken) async {
        let first = meta.withLock { current -> Bool in
            guard current?.generation != token.generation else { return false }
            current = Meta(subject: token.subject, generation: token.generation, expiresAt: token.expiresAt)
            return true
        }
        guard first else { return }
        try? await Task.sleep(for: .milliseconds(50))  // the keychain write
        value.withLock { $0 = token.value }
    }

    override func validToken() async throws(SessionError) -> AccessToken {
        if let token = cached() { return token }
        let token = try await inner.validToken()
        await publish(token)
        return token
    }

    override func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        let fresh = try await inner.tokenRejected(token)
        await publish(fresh)
        return fresh
    }

    override func signIn(_ credentials: Credentials) async throws(SessionError) {
        clear()
        try await inner.signIn(credentials)
    }

    override func signOut() async {
        clear()
        await inner.signOut()
    }

    private func clear() {
        meta.withLock { $0 = nil }
        value.withLock { $0 = nil }
    }
}

/// I4: refreshes only once the token has expired, ignoring the configured refresh skew: a token
/// about to expire is handed out.
final class IgnoresSkewStore: WrappedStore, @unchecked Sendable {
    override func validToken() async throws(SessionError) -> AccessToken {
        if let token = inner.currentToken() { return token }
        // The lifecycle asks for the skew; this store knows better and checks the expiry only.
        if let last = lastToken.withLock({ $0 }), last.isFresh(at: configuration.clock.now()) { return last }
        let token = try await inner.validToken()
        lastToken.withLock { $0 = token }
        return token
    }

    private let lastToken = Mutex<AccessToken?>(nil)

    override func signOut() async {
        lastToken.withLock { $0 = nil }
        await inner.signOut()
    }

    override func signIn(_ credentials: Credentials) async throws(SessionError) {
        lastToken.withLock { $0 = nil }
        try await inner.signIn(credentials)
    }

    override func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        lastToken.withLock { $0 = nil }
        let fresh = try await inner.tokenRejected(token)
        lastToken.withLock { $0 = fresh }
        return fresh
    }
}

/// A session store written from scratch around one session object per sign-in: the grant,
/// whether the server refused it, and one refresh at a time. Correct as it stands; the stores
/// below each change one thing.
class SessionBoxStore: SessionStore, @unchecked Sendable {
    // SAFETY: the mutable state is in Mutexes.
    final class Box: Sendable {
        let grant: Mutex<TokenGrant>
        let revoked = Atomic(false)
        let refreshing = Mutex<Task<Result<AccessToken, SessionError>, Never>?>(nil)
        init(_ grant: TokenGrant) { self.grant = Mutex(grant) }
    }

    let configuration: SessionStoreConfiguration
    let current = Mutex<Box?>(nil)
    /// The sign-in under way: a sign-out or a later sign-in replaces it, and its grant is dropped.
    let signingIn = Mutex<UInt64>(0)
    /// Whether a refusal ends the box's session (the correct answer).
    var revocationEnds: Bool { true }

    required init(configuration: SessionStoreConfiguration) { self.configuration = configuration }

    static func descriptor(_ name: String) -> StoreDescriptor {
        StoreDescriptor(name: name, summary: "wrong on purpose", isReferenceBroken: true) { Self(configuration: $0) }
    }

    func signIn(_ credentials: Credentials) async throws(SessionError) {
        let attempt = signingIn.withLock { attempt in
            attempt &+= 1
            return attempt
        }
        current.withLock { $0 = nil }
        switch await configuration.endpoint.signInResult(credentials) {
        case .success(let granted):
            let box = Box(granted)
            // Installed only if no sign-out or later sign-in came meanwhile.
            let installed = signingIn.withLock { latest in
                guard latest == attempt else { return false }
                current.withLock { $0 = box }
                return true
            }
            guard installed else { throw .signedOut }
            started(box)
        case .failure: throw .signInFailed
        }
    }

    /// A new session's box is in place.
    func started(_ box: Box) {}

    func signOut() async {
        signingIn.withLock { attempt in
            attempt &+= 1
            current.withLock { $0 = nil }
        }
    }

    func validToken() async throws(SessionError) -> AccessToken {
        guard let box = current.withLock({ $0 }) else { throw .signedOut }
        if box.revoked.load(ordering: .relaxed) { throw .refreshTokenRevoked }
        let token = box.grant.withLock { $0.accessToken }
        if token.isFresh(at: configuration.clock.now(), margin: configuration.refreshSkew) { return token }
        return try await refresh(box).get()
    }

    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        guard let box = current.withLock({ $0 }) else { throw .signedOut }
        if box.revoked.load(ordering: .relaxed) { throw .refreshTokenRevoked }
        let held = box.grant.withLock { $0.accessToken }
        if held.generation > token.generation, held.isFresh(at: configuration.clock.now(), margin: configuration.refreshSkew) {
            return held
        }
        return try await refresh(box).get()
    }

    /// One refresh of `box` for every caller; the outcome is the box's, whatever happened to the
    /// store meanwhile, unless the box is no longer current.
    func refresh(_ box: Box) async -> Result<AccessToken, SessionError> {
        let endpoint = configuration.endpoint
        let revocationEnds = self.revocationEnds
        let task = box.refreshing.withLock { slot in
            if let slot { return slot }
            let presented = box.grant.withLock { $0.refreshToken }
            let task = Task { () -> Result<AccessToken, SessionError> in
                switch await endpoint.refreshResult(presented) {
                case .success(let granted):
                    box.grant.withLock { $0 = granted }
                    return .success(granted.accessToken)
                case .failure(let error):
                    let error = SessionError(refreshFailure: error)
                    if error == .refreshTokenRevoked, revocationEnds { box.revoked.store(true, ordering: .relaxed) }
                    return .failure(error)
                }
            }
            slot = task
            return task
        }
        let result = await task.value
        box.refreshing.withLock { if $0 == task { $0 = nil } }
        guard current.withLock({ $0 === box }) else { return .failure(.signedOut) }
        return result
    }
}

/// I27: on `invalid_grant` tells the waiters the session was revoked, but keeps the session: the
/// next call refreshes it again, as if nothing had happened.
final class ForgetsRevocationStore: SessionBoxStore, @unchecked Sendable {
    override var revocationEnds: Bool { false }
}

/// I8: a timer refreshes each session's token ahead of its expiry, and sign-out forgets to stop
/// it: the ended session keeps being refreshed.
final class UncancelledKeepAliveStore: SessionBoxStore, @unchecked Sendable {
    override func started(_ box: Box) {
        let clock = configuration.clock
        let skew = configuration.refreshSkew
        Task { [weak self] in
            while let store = self {
                let token = box.grant.withLock { $0.accessToken }
                if !box.revoked.load(ordering: .relaxed), !token.isFresh(at: clock.now(), margin: skew) {
                    _ = await store.refresh(box)
                }
                try? await Task.sleep(for: .milliseconds(1))
            }
        }
    }
}

/// I13: when the server refuses the refresh token, signs the user in again with the credentials
/// it remembered, without asking: a session the user never started.
final class SilentReloginStore: WrappedStore, @unchecked Sendable {
    private let credentials = Mutex<Credentials?>(nil)

    override func signIn(_ credentials: Credentials) async throws(SessionError) {
        self.credentials.withLock { $0 = credentials }
        try await inner.signIn(credentials)
    }

    override func signOut() async {
        credentials.withLock { $0 = nil }
        await inner.signOut()
    }

    override func validToken() async throws(SessionError) -> AccessToken {
        do throws(SessionError) { return try await inner.validToken() } catch .refreshTokenRevoked {
            guard let remembered = credentials.withLock({ $0 }) else { throw .refreshTokenRevoked }
            try await inner.signIn(remembered)
            return try await inner.validToken()
        }
    }
}

/// I8 through the synchronous read: request headers read a copy of the token that sign-out does
/// not clear.
final class HeaderCacheStore: WrappedReadingStore, @unchecked Sendable {
    private let header = Mutex<AccessToken?>(nil)

    override func currentToken() -> AccessToken? {
        if let cached = header.withLock({ $0 }),
            cached.isFresh(at: configuration.clock.now(), margin: configuration.refreshSkew)
        {
            return cached
        }
        let token = inner.currentToken()
        header.withLock { $0 = token }
        return token
    }
}

/// I12 through the synchronous read: the fast path was never wired up; it answers `nil` and
/// every request waits on the async path.
final class SyncNeverReadyStore: WrappedReadingStore, @unchecked Sendable {
    override func currentToken() -> AccessToken? { nil }
}

/// I4 through the synchronous read: it answers from the last token it saw, without looking at
/// the expiry or at a refresh under way.
final class SyncLastSeenStore: WrappedReadingStore, @unchecked Sendable {
    private let last = Mutex<AccessToken?>(nil)

    override func currentToken() -> AccessToken? {
        if let token = inner.currentToken() { last.withLock { $0 = token } }
        return last.withLock { $0 }
    }

    override func signOut() async {
        await inner.signOut()
        last.withLock { $0 = nil }
    }

    override func signIn(_ credentials: Credentials) async throws(SessionError) {
        last.withLock { $0 = nil }
        try await inner.signIn(credentials)
    }
}

/// I13: remembers that the server refused a session, and keeps saying so after the user has
/// signed in again.
final class StickyRevocationStore: WrappedStore, @unchecked Sendable {
    private let revoked = Atomic(false)

    override func validToken() async throws(SessionError) -> AccessToken {
        if revoked.load(ordering: .relaxed) { throw .refreshTokenRevoked }
        do throws(SessionError) { return try await inner.validToken() } catch {
            if error == .refreshTokenRevoked { revoked.store(true, ordering: .relaxed) }
            throw error
        }
    }

    override func signOut() async {
        revoked.store(false, ordering: .relaxed)
        await inner.signOut()
    }
}

/// I9: fetches the new user's grant first and replaces the session only if it came: when the
/// server refuses the other user, the previous user's session stays in use.
final class KeepsSessionOnRefusalStore: WrappedStore, @unchecked Sendable {
    override func signIn(_ credentials: Credentials) async throws(SessionError) {
        // Checks the credentials with a throwaway store first; a refusal leaves everything as it was.
        let probe = MutexStore(configuration: configuration)
        try await probe.signIn(credentials)
        await probe.signOut()
        try await inner.signIn(credentials)
    }
}

/// I12: a sign-in the server refused returns as if it had succeeded (the error is logged and
/// swallowed); calls then find nobody signed in.
final class SwallowsSignInErrorStore: WrappedStore, @unchecked Sendable {
    override func signIn(_ credentials: Credentials) async throws(SessionError) {
        try? await inner.signIn(credentials)
    }
}

/// Correct, with a refresh rate limit on real time, as Alamofire's `AuthenticationInterceptor`
/// keeps one (`RefreshWindow`: at most 5 refreshes in 30 s, beyond which a request fails with
/// `excessiveRefresh`): a refresh past the limit fails at once, without asking the server.
final class RefreshWindowStore: WrappedStore, @unchecked Sendable {
    /// The window and the most refreshes in it; the tests set it before making stores.
    nonisolated(unsafe) static var window: (limit: Int, interval: Duration) = (5, .seconds(30))

    required init(configuration: SessionStoreConfiguration) {
        var limited = configuration
        limited.endpoint = RefreshWindowEndpoint(
            wrapped: configuration.endpoint, limit: Self.window.limit, interval: Self.window.interval)
        super.init(configuration: limited)
    }
}

final class RefreshWindowEndpoint: TokenEndpoint {
    let wrapped: any TokenEndpoint
    let limit: Int
    let interval: Duration
    private let refreshes = Mutex<[ContinuousClock.Instant]>([])

    init(wrapped: any TokenEndpoint, limit: Int, interval: Duration) {
        self.wrapped = wrapped
        self.limit = limit
        self.interval = interval
    }

    func signIn(_ credentials: Credentials) async throws(TokenEndpointError) -> TokenGrant {
        try await wrapped.signIn(credentials)
    }

    func refresh(_ refreshToken: RefreshToken) async throws(TokenEndpointError) -> TokenGrant {
        let allowed = refreshes.withLock { times in
            let now = ContinuousClock.now
            times.removeAll { now - $0 > interval }
            guard times.count < limit else { return false }
            times.append(now)
            return true
        }
        guard allowed else { throw .transient }  // excessive refresh
        return try await wrapped.refresh(refreshToken)
    }
}
