import SessionContract
import SessionStores
import Synchronization

/// Stores that are wrong in exactly one way, each to prove the oracle catches its invariant.
/// Most wrap a correct `MutexStore` and break one promise on top of it.
class WrappedStore: SessionStore, @unchecked Sendable {
    // SAFETY: subclasses keep their own state in Mutex/Atomic.
    let inner: MutexStore
    let configuration: SessionStoreConfiguration

    required init(configuration: SessionStoreConfiguration) {
        self.configuration = configuration
        inner = MutexStore(configuration: configuration)
    }

    func validToken() async throws(SessionError) -> AccessToken { try await inner.validToken() }
    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        try await inner.tokenRejected(token)
    }
    func signIn(_ credentials: Credentials) async throws(SessionError) { try await inner.signIn(credentials) }
    func signOut() async { await inner.signOut() }

    class func descriptor(_ name: String) -> StoreDescriptor {
        StoreDescriptor(name: name, summary: "wrong on purpose", isReferenceBroken: true) { Self(configuration: $0) }
    }
}

/// I2: every other waiter of a refresh is told it failed.
final class InconsistentOutcomeStore: WrappedStore, @unchecked Sendable {
    private let calls = Atomic(0)
    override func validToken() async throws(SessionError) -> AccessToken {
        if let token = inner.currentToken() { return token }
        let token = try await inner.validToken()
        if calls.add(1, ordering: .relaxed).newValue.isMultiple(of: 2) { throw .refreshFailed }
        return token
    }
}

/// I3: a caller that needs a refresh waits forever.
final class HangingStore: WrappedStore, @unchecked Sendable {
    override func validToken() async throws(SessionError) -> AccessToken {
        if let token = inner.currentToken() { return token }
        await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in }  // never resumed
        throw .signedOut
    }
}

/// I4: hands out the current token even when it has expired.
final class StaleStore: WrappedStore, @unchecked Sendable {
    private let last = Mutex<AccessToken?>(nil)
    override func signIn(_ credentials: Credentials) async throws(SessionError) {
        try await inner.signIn(credentials)
        let token = try await inner.validToken()
        last.withLock { $0 = token }
    }
    override func validToken() async throws(SessionError) -> AccessToken {
        if let token = last.withLock({ $0 }) { return token }
        return try await inner.validToken()
    }
}

/// I5 (and I6): a 401 for an old token hands that old token back.
final class BackwardsStore: WrappedStore, @unchecked Sendable {
    override func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        if let current = inner.currentToken(), token.generation < current.generation { return token }
        return try await inner.tokenRejected(token)
    }
}

/// I6: every 401 is treated as a 401 for the current token.
final class OverEagerRejectionStore: WrappedStore, @unchecked Sendable {
    override func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        guard let current = inner.currentToken() else { return try await inner.tokenRejected(token) }
        return try await inner.tokenRejected(current)
    }
}

/// I7: submits every refresh twice with the same refresh token (a blind retry).
final class DoubleSubmitStore: WrappedStore, @unchecked Sendable {
    required init(configuration: SessionStoreConfiguration) {
        var doubled = configuration
        doubled.endpoint = DoubleSubmitEndpoint(wrapped: configuration.endpoint)
        super.init(configuration: doubled)
    }
}

struct DoubleSubmitEndpoint: TokenEndpoint {
    let wrapped: any TokenEndpoint
    func signIn(_ credentials: Credentials) async throws(TokenEndpointError) -> TokenGrant {
        try await wrapped.signIn(credentials)
    }
    func refresh(_ refreshToken: RefreshToken) async throws(TokenEndpointError) -> TokenGrant {
        let first = try await wrapped.refresh(refreshToken)
        _ = try? await wrapped.refresh(refreshToken)
        return first
    }
}

/// I8: sign-out does nothing.
final class NoFenceStore: WrappedStore, @unchecked Sendable {
    override func signOut() async {}
    override func signIn(_ credentials: Credentials) async throws(SessionError) {
        if inner.currentToken() == nil { try await inner.signIn(credentials) }
    }
}

/// I9: a second sign-in is ignored while a session exists.
final class StickyUserStore: WrappedStore, @unchecked Sendable {
    private let signedIn = Atomic(false)
    override func signIn(_ credentials: Credentials) async throws(SessionError) {
        if signedIn.load(ordering: .relaxed) { return }
        try await inner.signIn(credentials)
        signedIn.store(true, ordering: .relaxed)
    }
}

/// I10: once a refresh fails, every later call fails without asking the server.
final class StickyFailureStore: WrappedStore, @unchecked Sendable {
    private let failed = Atomic(false)
    override func validToken() async throws(SessionError) -> AccessToken {
        if let token = inner.currentToken() { return token }
        if failed.load(ordering: .relaxed) { throw .refreshFailed }
        do throws(SessionError) {
            return try await inner.validToken()
        } catch {
            if error == .refreshFailed { failed.store(true, ordering: .relaxed) }
            throw error
        }
    }
}

/// I11: a cancelled waiter poisons the refresh for everyone waiting with it.
final class PoisonedByCancellationStore: WrappedStore, @unchecked Sendable {
    private let poisoned = Atomic(false)
    override func validToken() async throws(SessionError) -> AccessToken {
        if let token = inner.currentToken() { return token }
        poisoned.store(false, ordering: .relaxed)
        let outcome = await withTaskCancellationHandler { () async -> Result<AccessToken, SessionError> in
            do throws(SessionError) { return .success(try await inner.validToken()) } catch { return .failure(error) }
        } onCancel: {
            poisoned.store(true, ordering: .relaxed)
        }
        if poisoned.load(ordering: .relaxed) { throw .cancelled }
        return try outcome.get()
    }
}

/// I3: sign-out first waits for the refresh in flight, then ends the session: a sign-out that
/// waits on the network, which a slow server stalls.
final class SignOutAwaitsRefreshStore: WrappedStore, @unchecked Sendable {
    override func signOut() async {
        _ = try? await inner.validToken()
        await inner.signOut()
    }
}
