import Dispatch
import Foundation
import SessionContract
import SessionStores
import Synchronization

/// Stores for checking the command line itself: one crashes the process at the first expiry,
/// one never answers, one makes its refresh single-flight with a semaphore and so blocks the
/// threads of the cooperative pool, one is correct but allocates exactly once per read, so
/// that every allocation counter can be held to a known figure, and one restores a saved
/// session without its refresh token (the Keychain item unreadable before the first unlock), so
/// it gives the session up at its first refresh; one is correct but resumes each read from a
/// Dispatch thread (work `explore` cannot control); one has a single-flight refresh with a gap
/// that only two preemptions in the right order reach (a depth-3 bug for `explore`'s PCT); one
/// refreshes on every 401 and declares it, so its only findings are known; one fences its refresh
/// by cancelling it, and a refresh past its cancellation check lands after the sign-out; one
/// keeps handing out a token after a 401 rotated it, until the token nears its expiry; one lets a
/// cancelled 401 caller cancel the refresh every waiter shares; one is correct but hands every
/// answer back through the main queue; and one correct store comes with one bug each of a kind
/// auth libraries have shipped (a waiter's watchdog, a failure that rolls back past a sign-out, a
/// 401 that replays a failure, a sign-in that keeps the old user until it is granted, a refreshed
/// grant saved after letting go of the lock); and six
/// are the mutex store with one step-up promise broken each (`step-up-…`). They
/// are reference-broken (never run by default), and none is in the SessionBenchCLI library: the
/// `session-bench` executable hands them to the command line when
/// `SESSION_BENCH_SELF_TEST_STORES=1` is set, in every process it starts (the measuring and
/// exploring processes are the same executable, with the same environment).
public enum SelfTestStores {
    /// Whether `SESSION_BENCH_SELF_TEST_STORES=1` is set.
    public static var enabled: Bool { ProcessInfo.processInfo.environment["SESSION_BENCH_SELF_TEST_STORES"] == "1" }

    public static let all: [StoreDescriptor] =
        [
            StoreDescriptor(
                name: "crashes-on-expiry", summary: "traps when a refresh is needed (self-test)",
                isReferenceBroken: true
            ) {
                ExpiryTrap(configuration: $0, behaviour: .crash)
            },
            StoreDescriptor(
                name: "hangs-on-expiry", summary: "never answers when a refresh is needed (self-test)",
                isReferenceBroken: true
            ) {
                ExpiryTrap(configuration: $0, behaviour: .hang)
            },
            StoreDescriptor(
                name: "semaphore-refresh",
                summary: "single-flight through a DispatchSemaphore held across an await (self-test)",
                isReferenceBroken: true
            ) { SemaphoreRefreshStore(configuration: $0) },
            StoreDescriptor(
                name: "allocates-once-per-read",
                summary: "the mutex store plus one 32-byte malloc per read (self-test)",
                isReferenceBroken: true
            ) { AllocatingStore(configuration: $0) },
            StoreDescriptor(
                name: "mutex-unshared-refresh",
                summary:
                    "a Mutex around the grant, each caller that finds it expired refreshing on its own (self-test)",
                isReferenceBroken: true
            ) { UnsharedRefreshStore(configuration: $0) },
            StoreDescriptor(
                name: "dispatch-hop",
                summary: "the mutex store, each read first hopping through a global DispatchQueue (self-test)",
                isReferenceBroken: true
            ) { DispatchHopStore(configuration: $0) },
            StoreDescriptor(
                name: "restores-without-refresh-token",
                summary: "a restored session's first refresh ends in signed out (self-test)", isReferenceBroken: true,
                offersSynchronousRead: false, persistsSession: true
            ) { RestoredWithoutRefreshToken(configuration: $0) },
            StoreDescriptor(
                name: "gap-before-publish",
                summary: "single-flight, but a caller resuming while a refresh publishes refreshes again (self-test)",
                isReferenceBroken: true
            ) { GapBeforePublishStore(configuration: $0) },
            declaresUnconditional401,
            cancelFenced,
            cachesPast401,
            cancelsShared401,
            mainQueueDelivery,
        ] + oneBug + stateStreams + patientStateStreams + [sharedFlight, savesInBackground] + stepUp
            + sharedStorage + dispatchHops
}

/// The mutex store over storage, except that a session it restored (rather than signed in
/// itself) has no refresh token: its first refresh fails with `signedOut`, without a call.
private final class RestoredWithoutRefreshToken: SessionStore {
    private let inner: MutexStore
    private let signedInHere = Atomic<Bool>(false)

    init(configuration: SessionStoreConfiguration) { inner = MutexStore(configuration: configuration) }

    func validToken() async throws(SessionError) -> AccessToken { try await inner.validToken() }

    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        guard signedInHere.load(ordering: .acquiring) else { throw .signedOut }
        return try await inner.tokenRejected(token)
    }

    func signIn(_ credentials: Credentials) async throws(SessionError) {
        signedInHere.store(true, ordering: .releasing)
        try await inner.signIn(credentials)
    }

    func signOut() async { await inner.signOut() }
}

/// The mutex store with exactly one heap allocation of ``bytes`` bytes on every read: a store
/// whose allocations per read are known to be 1.
/// A `Mutex` around the grant and nothing else: a caller that finds the token expired sends its
/// own refresh, so two callers between the check and the answer refresh twice (no await is
/// ever made under the lock, and no actor is involved).
private final class UnsharedRefreshStore: SessionStore {
    private let configuration: SessionStoreConfiguration
    private let grant = Mutex<TokenGrant?>(nil)

    init(configuration: SessionStoreConfiguration) { self.configuration = configuration }

    func validToken() async throws(SessionError) -> AccessToken {
        guard let held = grant.withLock({ $0 }) else { throw .signedOut }
        let now = configuration.clock.now()
        if held.accessToken.isFresh(at: now, margin: configuration.refreshSkew) { return held.accessToken }
        let next: TokenGrant
        do throws(TokenEndpointError) { next = try await configuration.endpoint.refresh(held.refreshToken) } catch {
            throw error == .invalidGrant ? .refreshTokenRevoked : .refreshFailed
        }
        grant.withLock { $0 = next }
        return next.accessToken
    }

    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken { try await validToken() }

    func signIn(_ credentials: Credentials) async throws(SessionError) {
        do throws(TokenEndpointError) {
            let first = try await configuration.endpoint.signIn(credentials)
            grant.withLock { $0 = first }
        } catch { throw .refreshFailed }
    }

    func signOut() async { grant.withLock { $0 = nil } }
}

/// The mutex store, each `validToken()` first waiting for a block on a global Dispatch queue to
/// resume it: a read begun in one session can start its work in the next, after another user's
/// sign-in, and answer from a session that is not its caller's (`explore --scenario generated`).
private final class DispatchHopStore: SessionStore {
    private let inner: MutexStore

    init(configuration: SessionStoreConfiguration) { inner = MutexStore(configuration: configuration) }

    func validToken() async throws(SessionError) -> AccessToken {
        await withCheckedContinuation { (resume: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async { resume.resume() }
        }
        return try await inner.validToken()
    }

    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        try await inner.tokenRejected(token)
    }
    func signIn(_ credentials: Credentials) async throws(SessionError) { try await inner.signIn(credentials) }
    func signOut() async { await inner.signOut() }
}

private final class AllocatingStore: SessionStore {
    static let bytes = 32
    private let inner: MutexStore

    init(configuration: SessionStoreConfiguration) { inner = MutexStore(configuration: configuration) }

    /// One `malloc` and its `free`, kept from being optimized away.
    @_optimize(none)
    private static func allocateOnce() {
        let block = malloc(bytes)
        free(block)
    }

    func validToken() async throws(SessionError) -> AccessToken {
        Self.allocateOnce()
        return try await inner.validToken()
    }

    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        try await inner.tokenRejected(token)
    }
    func signIn(_ credentials: Credentials) async throws(SessionError) { try await inner.signIn(credentials) }
    func signOut() async { await inner.signOut() }
}

private final class ExpiryTrap: SessionStore {
    enum Behaviour { case crash, hang }

    private let inner: MutexStore
    private let behaviour: Behaviour

    init(configuration: SessionStoreConfiguration, behaviour: Behaviour) {
        inner = MutexStore(configuration: configuration)
        self.behaviour = behaviour
    }

    func validToken() async throws(SessionError) -> AccessToken {
        if let token = inner.currentToken() { return token }
        switch behaviour {
        case .crash: fatalError("self-test store crashing on purpose")
        case .hang: await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in }
        }
        throw .signedOut
    }

    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken { try await validToken() }
    func signIn(_ credentials: Credentials) async throws(SessionError) { try await inner.signIn(credentials) }
    func signOut() async { await inner.signOut() }
}

/// The common "make the refresh single-flight with a semaphore" store: `wait()` blocks the
/// calling thread, and the semaphore is held across the `await` of the refresh. Once every
/// thread of the cooperative pool is blocked in `wait()`, the refresh can never resume.
private final class SemaphoreRefreshStore: SessionStore, @unchecked Sendable {
    // SAFETY: `grant` is read and written only while holding `semaphore`.
    private let semaphore = DispatchSemaphore(value: 1)
    private let endpoint: any TokenEndpoint
    private let clock: TokenClock
    private let skew: Duration
    private var grant: TokenGrant?

    init(configuration: SessionStoreConfiguration) {
        endpoint = configuration.endpoint
        clock = configuration.clock
        skew = configuration.refreshSkew
    }

    func validToken() async throws(SessionError) -> AccessToken {
        semaphore.wait()
        defer { semaphore.signal() }
        guard let current = grant else { throw .signedOut }
        if current.accessToken.isFresh(at: clock.now(), margin: skew) { return current.accessToken }
        switch await endpoint.refreshResult(current.refreshToken) {
        case .success(let next):
            grant = next
            return next.accessToken
        case .failure(let error): throw SessionError(refreshFailure: error)
        }
    }

    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken { try await validToken() }

    func signIn(_ credentials: Credentials) async throws(SessionError) {
        let result = await endpoint.signInResult(credentials)
        semaphore.wait()
        defer { semaphore.signal() }
        guard case .success(let next) = result else { throw .signInFailed }
        grant = next
    }

    func signOut() async {
        semaphore.wait()
        grant = nil
        semaphore.signal()
    }
}
