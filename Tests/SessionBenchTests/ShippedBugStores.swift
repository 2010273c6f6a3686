import Foundation
import SessionContract
import SessionSync
import SessionStores
import Synchronization

// Stores with one bug each of the kinds well-known libraries shipped, written the way an app
// would write them. The oracle must catch each in a default `compare`. Their mutexes announce
// themselves to ThreadSanitizer (`withLock(visibleTo:)`), so a TSan run reports only real races.

/// The state most of these stores keep: the grant, and whether the session was revoked.
struct ShippedSessionState: Sendable {
    var grant: TokenGrant?
    var revoked = false
}

/// A lock that suspends rather than blocks: callers queue on continuations.
final class AsyncLock: Sendable {
    private let state = Mutex<(held: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    func lock() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock(visibleTo: self) { state -> Bool in
                if !state.held {
                    state.held = true
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    func unlock() {
        let next = state.withLock(visibleTo: self) { state -> CheckedContinuation<Void, Never>? in
            if state.waiting.isEmpty {
                state.held = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}

/// Base for stores written from scratch: sign-in, sign-out and the grant under a Mutex.
class HandwrittenStore: SessionStore, @unchecked Sendable {
    // SAFETY: all mutable state is in `state`, a Mutex.
    let endpoint: any TokenEndpoint
    let clock: TokenClock
    let skew: Duration
    let state = Mutex(ShippedSessionState())

    required init(configuration: SessionStoreConfiguration) {
        endpoint = configuration.endpoint
        clock = configuration.clock
        skew = configuration.refreshSkew
    }

    static func descriptor(_ name: String) -> StoreDescriptor {
        StoreDescriptor(name: name, summary: "wrong on purpose", isReferenceBroken: true) { Self(configuration: $0) }
    }

    func freshToken() throws(SessionError) -> AccessToken? {
        let snapshot = state.withLock(visibleTo: self) { $0 }
        if snapshot.revoked { throw .refreshTokenRevoked }
        guard let grant = snapshot.grant else { throw .signedOut }
        return grant.accessToken.isFresh(at: clock.now(), margin: skew) ? grant.accessToken : nil
    }

    /// One refresh with the current refresh token, storing the result.
    func refreshNow() async throws(SessionError) -> AccessToken {
        guard let refreshToken = state.withLock(visibleTo: self, { $0.grant?.refreshToken }) else { throw .signedOut }
        switch await endpoint.refreshResult(refreshToken) {
        case .success(let grant):
            state.withLock(visibleTo: self) { $0.grant = grant }
            return grant.accessToken
        case .failure(.invalidGrant), .failure(.invalidCredentials):
            state.withLock(visibleTo: self) { $0.revoked = true }
            throw .refreshTokenRevoked
        case .failure:
            throw .refreshFailed
        }
    }

    func validToken() async throws(SessionError) -> AccessToken {
        if let token = try freshToken() { return token }
        return try await refreshNow()
    }

    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        if let current = try freshToken(), current.generation > token.generation { return current }
        return try await refreshNow()
    }

    func signIn(_ credentials: Credentials) async throws(SessionError) {
        state.withLock(visibleTo: self) { $0 = ShippedSessionState() }
        switch await endpoint.signInResult(credentials) {
        case .success(let grant): state.withLock(visibleTo: self) { $0.grant = grant }
        case .failure: throw .signInFailed
        }
    }

    func signOut() async { state.withLock(visibleTo: self) { $0 = ShippedSessionState() } }

    let grantRefresh = Mutex<Task<Result<TokenGrant, TokenEndpointError>, Never>?>(nil)

    /// Joins the refresh in flight, or starts one presenting `refreshToken`.
    func joinRefresh(presenting refreshToken: RefreshToken) async -> Result<TokenGrant, TokenEndpointError> {
        let task = grantRefresh.withLock(visibleTo: self) { current in
            if let current { return current }
            let endpoint = self.endpoint
            let task = Task { await endpoint.refreshResult(refreshToken) }
            current = task
            return task
        }
        let result = await task.value
        grantRefresh.withLock(visibleTo: self) { if $0 == task { $0 = nil } }
        return result
    }

    /// Joins the `refreshNow()` in flight in `slot`, or starts one there.
    func joinRefreshNow(in slot: borrowing Mutex<Task<Result<AccessToken, SessionError>, Never>?>) async
        -> Result<AccessToken, SessionError>
    {
        let task = slot.withLock(visibleTo: self) { current in
            if let current { return current }
            let task = Task { () -> Result<AccessToken, SessionError> in
                do throws(SessionError) { return .success(try await self.refreshNow()) } catch { return .failure(error) }
            }
            current = task
            return task
        }
        let result = await task.value
        slot.withLock(visibleTo: self) { if $0 == task { $0 = nil } }
        return result
    }
}

/// Refreshes one at a time behind an async lock, but never looks at the token again once it
/// has the lock: N callers at one expiry make N refreshes, one after another, each with the
/// newest refresh token (so the server sees no reuse).
final class SerializedWithoutRecheckStore: HandwrittenStore, @unchecked Sendable {
    private let refreshLock = AsyncLock()

    override func validToken() async throws(SessionError) -> AccessToken {
        if let token = try freshToken() { return token }
        await refreshLock.lock()
        defer { refreshLock.unlock() }
        return try await refreshNow()  // missing: check again whether someone refreshed meanwhile
    }
}

/// Callers that find a refresh in flight wait for it to finish, then refresh on their own
/// (Alamofire #3297: requests queued during a refresh trigger another one).
final class LateJoinerStore: HandwrittenStore, @unchecked Sendable {
    private let inFlight = Mutex<Task<Void, Never>?>(nil)

    override func validToken() async throws(SessionError) -> AccessToken {
        if let token = try freshToken() { return token }
        if let running = inFlight.withLock(visibleTo: self, { $0 }) {
            await running.value
            return try await refreshNow()  // should have returned the token it waited for
        }
        let task = Task { _ = try? await self.refreshNow() }
        inFlight.withLock(visibleTo: self) { $0 = task }
        await task.value
        inFlight.withLock(visibleTo: self) { $0 = nil }
        guard let token = try freshToken() else { throw .refreshFailed }
        return token
    }
}

/// `validToken` and `tokenRejected` each keep their own in-flight refresh: when both are
/// needed at once, both go to the server with the same refresh token.
final class TwoRefreshPathsStore: HandwrittenStore, @unchecked Sendable {
    private let readRefresh = Mutex<Task<Result<AccessToken, SessionError>, Never>?>(nil)
    private let rejectionRefresh = Mutex<Task<Result<AccessToken, SessionError>, Never>?>(nil)


    override func validToken() async throws(SessionError) -> AccessToken {
        if let token = try freshToken() { return token }
        return try await joinRefreshNow(in: readRefresh).get()
    }

    override func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        if let current = try freshToken(), current.generation > token.generation { return current }
        return try await joinRefreshNow(in: rejectionRefresh).get()
    }
}

/// When the token has expired, gives up instead of refreshing.
final class GivesUpStore: HandwrittenStore, @unchecked Sendable {
    override func validToken() async throws(SessionError) -> AccessToken {
        if let token = try freshToken() { return token }
        throw .refreshFailed
    }
}

/// Treats any failed refresh — a timeout, a 503 — as the end of the session.
final class BlipLogsOutStore: HandwrittenStore, @unchecked Sendable {
    override func validToken() async throws(SessionError) -> AccessToken {
        if let token = try freshToken() { return token }
        guard let refreshToken = state.withLock(visibleTo: self, { $0.grant?.refreshToken }) else { throw .signedOut }
        switch await joinRefresh(presenting: refreshToken) {
        case .success(let grant):
            state.withLock(visibleTo: self) { if $0.grant?.refreshToken == refreshToken { $0.grant = grant } }
            return grant.accessToken
        case .failure:
            state.withLock(visibleTo: self) { $0 = ShippedSessionState(grant: nil, revoked: true) }  // any failure logs out
            throw .refreshTokenRevoked
        }
    }

    override func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken { try await validToken() }
}

/// Answers a 401 with the token it holds whenever that token has not expired, even when it is
/// the very token that was rejected.
final class IgnoresCurrent401Store: WrappedStore, @unchecked Sendable {
    override func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        if let current = inner.currentToken() { return current }
        return try await inner.tokenRejected(token)
    }
}

/// A correct store with a fast-path token cache in front of it, as apps add for
/// request-building code; what each subclass gets wrong is when the cache is cleared.
class FastPathCacheStore: WrappedStore, @unchecked Sendable {
    let cache = Mutex<AccessToken?>(nil)

    override func validToken() async throws(SessionError) -> AccessToken {
        if let cached = cache.withLock(visibleTo: self, { $0 }), cached.isFresh(at: configuration.clock.now(), margin: configuration.refreshSkew) {
            return cached
        }
        let token = try await inner.validToken()
        cache.withLock(visibleTo: self) { $0 = token }
        return token
    }

    override func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        cache.withLock(visibleTo: self) { if $0?.generation == token.generation { $0 = nil } }
        return try await inner.tokenRejected(token)
    }

    override func signOut() async {
        cache.withLock(visibleTo: self) { $0 = nil }
        await inner.signOut()
    }

    override func signIn(_ credentials: Credentials) async throws(SessionError) {
        cache.withLock(visibleTo: self) { $0 = nil }
        try await inner.signIn(credentials)
    }
}

/// A 401 refreshes the store behind the cache but leaves the cache alone, so readers keep
/// getting the replaced token: a newer token, already handed out, is followed by the older one.
final class LastWriterWinsCacheStore: FastPathCacheStore, @unchecked Sendable {
    override func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        try await inner.tokenRejected(token)
    }
}

/// Sign-out clears the cache later, on a task, so reads right after `signOut()` returns
/// still get the old token.
final class LazySignOutCacheStore: FastPathCacheStore, @unchecked Sendable {
    override func signOut() async {
        await inner.signOut()
        Task {
            try? await Task.sleep(for: .milliseconds(5))
            self.cache.withLock(visibleTo: self) { $0 = nil }
        }
    }
}

/// Sign-out clears the cache but a new user's sign-in does not: after a user switch,
/// readers keep getting the previous user's token until it expires.
final class UserSwitchKeepsCacheStore: FastPathCacheStore, @unchecked Sendable {
    override func signIn(_ credentials: Credentials) async throws(SessionError) {
        try await inner.signIn(credentials)
    }
}

/// Single-flight, but with no notion of the session a refresh belongs to: a refresh that lands
/// after sign-out writes its tokens back (logto kotlin #253).
final class ResurrectingStore: HandwrittenStore, @unchecked Sendable {
    override func validToken() async throws(SessionError) -> AccessToken {
        if let token = try freshToken() { return token }
        guard let refreshToken = state.withLock(visibleTo: self, { $0.grant?.refreshToken }) else { throw .signedOut }
        switch await joinRefresh(presenting: refreshToken) {
        case .success(let grant):
            state.withLock(visibleTo: self) { $0.grant = grant }  // missing: was the session ended meanwhile?
            return grant.accessToken
        case .failure(.invalidGrant), .failure(.invalidCredentials):
            state.withLock(visibleTo: self) { $0.revoked = true }
            throw .refreshTokenRevoked
        case .failure:
            throw .refreshFailed
        }
    }

    override func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        if let current = try freshToken(), current.generation > token.generation { return current }
        return try await validToken()
    }

    override func signOut() async {
        grantRefresh.withLock(visibleTo: self) { $0 = nil }
        state.withLock(visibleTo: self) { $0 = ShippedSessionState() }
    }
}

/// The first caller runs the refresh in its own task and the others wait for it: cancelling
/// that caller cancels the request, and every waiter fails with it.
final class InitiatorRunsRefreshStore: HandwrittenStore, @unchecked Sendable {
    private let waiters = Mutex<[CheckedContinuation<Result<AccessToken, SessionError>, Never>]?>(nil)

    override func validToken() async throws(SessionError) -> AccessToken {
        if let token = try freshToken() { return token }
        let isFirst = waiters.withLock(visibleTo: self) { list -> Bool in
            if list == nil {
                list = []
                return true
            }
            return false
        }
        if isFirst {
            let outcome: Result<AccessToken, SessionError>
            do throws(SessionError) { outcome = .success(try await refreshNow()) } catch { outcome = .failure(error) }
            let parked = waiters.withLock(visibleTo: self) { list in
                defer { list = nil }
                return list ?? []
            }
            for waiter in parked { waiter.resume(returning: outcome) }
            return try outcome.get()
        }
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Result<AccessToken, SessionError>, Never>) in
            let parked = waiters.withLock(visibleTo: self) { list -> Bool in
                guard list != nil else { return false }
                list!.append(continuation)
                return true
            }
            if !parked { continuation.resume(returning: .failure(.refreshFailed)) }
        }
        return try outcome.get()
    }
}

/// Resumes its waiters when a refresh succeeds and forgets them when it fails (okta-mobile-swift
/// #170's family: a continuation on one path only).
final class ForgetsWaitersOnFailureStore: HandwrittenStore, @unchecked Sendable {
    private let waiters = Mutex<[CheckedContinuation<AccessToken, Never>]?>(nil)

    override func validToken() async throws(SessionError) -> AccessToken {
        if let token = try freshToken() { return token }
        let token = await withCheckedContinuation { (continuation: CheckedContinuation<AccessToken, Never>) in
            let start = waiters.withLock(visibleTo: self) { list -> Bool in
                if list == nil {
                    list = [continuation]
                    return true
                }
                list!.append(continuation)
                return false
            }
            guard start else { return }
            Task {
                guard let token = try? await self.refreshNow() else {
                    self.waiters.withLock(visibleTo: self) { $0 = nil }  // the waiters are dropped, never resumed
                    return
                }
                let parked = self.waiters.withLock(visibleTo: self) { list in
                    defer { list = nil }
                    return list ?? []
                }
                for waiter in parked { waiter.resume(returning: token) }
            }
        }
        return token
    }
}

/// Single-flight, but when the shared refresh fails each waiter retries the server on its own,
/// a few times (a retry policy applied per request).
final class RetryStormStore: HandwrittenStore, @unchecked Sendable {
    private let inFlight = Mutex<Task<Result<AccessToken, SessionError>, Never>?>(nil)

    override func validToken() async throws(SessionError) -> AccessToken {
        if let token = try freshToken() { return token }
        let result = await joinRefreshNow(in: inFlight)
        guard case .failure(.refreshFailed) = result else { return try result.get() }
        for _ in 0..<3 {
            if let token = try? await refreshNow() { return token }
        }
        throw .refreshFailed
    }
}

/// Re-reads the session from secure storage every 1,000th call, and takes a failed read (the
/// keychain is briefly unavailable, as on a locked device) for "no session": the caller is
/// told it is signed out although nobody signed out and the server refused nothing.
final class StorageBlipSignsOutStore: WrappedStore, @unchecked Sendable {
    private let reads = Atomic(0)

    override func validToken() async throws(SessionError) -> AccessToken {
        if reads.add(1, ordering: .relaxed).newValue.isMultiple(of: 1_000) {
            throw .signedOut  // the storage read failed; should have kept the session in memory
        }
        return try await inner.validToken()
    }
}
