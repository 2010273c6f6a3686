import Foundation
import SessionContract

/// An app's own store: a class with an `NSLock` and an in-flight refresh `Task`.
/// session-bench runs every scenario and invariant on it beside the built-in stores:
///
///     swift run my-bench compare --stores app-store,mutex
///     swift test                  # Tests/AppSessionTests: the same checks inside a @Test
public final class AppSessionStore: SessionStore, @unchecked Sendable {
    // SAFETY: every stored var is read and written under `lock`.
    private let lock = NSLock()
    private let endpoint: any TokenEndpoint
    private let clock: TokenClock
    private let skew: Duration
    private var grant: TokenGrant?
    private var revoked = false
    private var epoch: UInt64 = 0
    private var inFlight: Task<Result<TokenGrant, TokenEndpointError>, Never>?
    /// The planted race of `app-store-racy` (see ``racy``).
    private let planted: Bool

    public convenience init(configuration: SessionStoreConfiguration) {
        self.init(configuration: configuration, planted: false)
    }

    init(configuration: SessionStoreConfiguration, planted: Bool) {
        endpoint = configuration.endpoint
        clock = configuration.clock
        skew = configuration.refreshSkew
        self.planted = planted
    }

    public func validToken() async throws(SessionError) -> AccessToken {
        try await token(rejecting: nil)
    }

    public func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        try await self.token(rejecting: token)
    }

    private func token(rejecting rejected: AccessToken?) async throws(SessionError) -> AccessToken {
        enum Next {
            case ready(AccessToken)
            case wait(Task<Result<TokenGrant, TokenEndpointError>, Never>, UInt64)
            case fail(SessionError)
            /// The planted race: a refresh decided under the lock, started under it again later.
            case start(RefreshToken)
        }
        let next: Next = lock.withLock {
            if revoked { return .fail(.refreshTokenRevoked) }
            guard let grant else { return .fail(.signedOut) }
            let current = grant.accessToken
            let stale = rejected.map { $0.generation < current.generation } ?? true
            if inFlight == nil, stale, current.isFresh(at: clock.now(), margin: skew) { return .ready(current) }
            if let inFlight { return .wait(inFlight, epoch) }
            if planted { return .start(grant.refreshToken) }
            let endpoint = self.endpoint
            let refreshToken = grant.refreshToken
            let task = Task { await endpoint.refreshResult(refreshToken) }
            inFlight = task
            return .wait(task, epoch)
        }
        var decided = next
        if case .start(let refreshToken) = next {
            // A suspension between deciding and starting (a log line, a reachability check): the
            // decision is not checked again, so two callers can both start a refresh.
            await Task.yield()
            let endpoint = self.endpoint
            decided = lock.withLock {
                let task = Task { await endpoint.refreshResult(refreshToken) }
                inFlight = task
                return .wait(task, epoch)
            }
        }
        switch decided {
        case .ready(let token): return token
        case .fail(let error): throw error
        case .start: preconditionFailure("started above")
        case .wait(let task, let startEpoch):
            let result = await task.value
            return try lock.withLock { () -> Result<AccessToken, SessionError> in
                guard epoch == startEpoch else { return .failure(.signedOut) }
                let outcome = result.map(\.accessToken).mapError(SessionError.init(refreshFailure:))
                if inFlight == task {
                    inFlight = nil
                    if case .success(let new) = result { grant = new }
                    if case .failure(.refreshTokenRevoked) = outcome { revoked = true }
                }
                return outcome
            }.get()
        }
    }

    public func signIn(_ credentials: Credentials) async throws(SessionError) {
        let startEpoch = lock.withLock { () -> UInt64 in
            epoch &+= 1
            grant = nil
            revoked = false
            inFlight = nil
            return epoch
        }
        let result = await endpoint.signInResult(credentials)
        try lock.withLock { () -> Result<Void, SessionError> in
            guard epoch == startEpoch else { return .failure(.signedOut) }
            guard case .success(let new) = result else { return .failure(.signInFailed) }
            grant = new
            return .success(())
        }.get()
    }

    public func signOut() async {
        lock.withLock {
            epoch &+= 1
            grant = nil
            revoked = false
            inFlight = nil
        }
    }
}

extension AppSessionStore {
    /// How session-bench names and builds it.
    public static let descriptor = StoreDescriptor(
        name: "app-store", summary: "the app's NSLock store with an in-flight Task"
    ) { AppSessionStore(configuration: $0) }

    /// The same store with a race planted in it, for `explore` to find: the decision to refresh is
    /// made under the lock and the refresh started under it again after a suspension, unchecked.
    ///
    ///     swift run my-bench explore --stores app-store-racy
    public static let racy = StoreDescriptor(
        name: "app-store-racy", summary: "app-store with a planted race: refresh decided, then started after an await",
        isReferenceBroken: true
    ) { AppSessionStore(configuration: $0, planted: true) }
}
