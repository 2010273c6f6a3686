import SessionContract
import SessionSync
import Synchronization

/// The idiomatic Swift answer: an actor that keeps the in-flight refresh as a `Task` and
/// lets every caller await the same one (the seed ADR's actor, done right).
///
/// - Guarantee: single-flight refresh — the check for an in-flight task and its creation
///   happen in one actor turn, with no `await` between them. Sign-out and sign-in advance an
///   epoch; a caller that wakes in a later epoch gets ``SessionError/signedOut``, so a refresh
///   finishing after sign-out is discarded. All callers of one task see its one result.
/// - Cost model: every call, fast path included, is an actor hop (an enqueue and, under
///   contention, a thread switch); a refresh allocates one `Task`. A fast-path read allocates
///   nothing when uncontended and about one allocation when several callers contend: a caller
///   that finds the actor busy is enqueued as a job on it (1.00 per read with 4 callers in
///   `steady-reads`). A parked caller holds ~2 KB more than with a lock store (the task's
///   awaiting frames spill into a new slab of its allocator).
/// - Step-up: the in-flight prompt is a `Task` too, joined the same way, so every API object's
///   callers share one prompt; it runs outside the actor, which keeps serving base reads
///   meanwhile. The elevated token is dropped with the session.
/// - State: published from inside the actor, so subscribers see changes in the order the actor
///   made them.
/// - Known weakness: waiters are released only when the refresh task returns, even after
///   sign-out or their own cancellation; a hung token server hangs them all. There is no
///   synchronous read.
public actor ActorTaskStore: ObservableSessionStore, StepUpSessionStore {
    /// How subscribers get the state.
    public enum StateStream: Sendable {
        /// Every subscriber gets every change (``StateBroadcaster``).
        case broadcast
        /// The seed ADR's `stateStream` as written: one continuation, which each new subscriber
        /// replaces, so earlier subscribers silently stop hearing. Reference-broken.
        case singleContinuation
    }

    private typealias ElevationTask = Task<Result<ElevatedToken, SessionError>, Never>
    /// The server's answer, and whether its token was still fresh when it arrived: decided
    /// once, inside the task, so every waiter of one refresh gets the same outcome whatever
    /// instant it wakes at.
    private typealias RefreshTask = Task<(result: Result<TokenGrant, TokenEndpointError>, freshOnArrival: Bool), Never>

    private let endpoint: any TokenEndpoint
    private let clock: TokenClock
    private let skew: Duration
    private var grant: TokenGrant?
    private var isRevoked = false
    private var epoch: UInt64 = 0
    private var inFlight: RefreshTask?
    private var elevated: ElevatedToken?
    private var elevation: ElevationTask?
    private let authenticator: (any StepUpAuthenticator)?
    private let stepUpEndpoint: (any StepUpEndpoint)?
    private let broadcaster = StateBroadcaster()
    private let single: SingleContinuationStream?
    private var stateVersion: UInt64 = 0
    /// Where ``ActorFastReadStore`` reads from: the token this actor would answer a read with.
    private let snapshot: TokenSnapshot?

    public init(configuration: SessionStoreConfiguration, stateStream: StateStream = .broadcast) {
        self.init(configuration: configuration, stateStream: stateStream, snapshot: nil)
    }

    init(configuration: SessionStoreConfiguration, stateStream: StateStream = .broadcast, snapshot: TokenSnapshot?) {
        self.snapshot = snapshot
        endpoint = configuration.endpoint
        clock = configuration.clock
        skew = configuration.refreshSkew
        authenticator = configuration.authenticator
        stepUpEndpoint = configuration.endpoint as? any StepUpEndpoint
        single = stateStream == .singleContinuation ? SingleContinuationStream() : nil
    }

    public nonisolated func sessionStates() -> AsyncStream<SessionState> {
        single?.subscribe() ?? broadcaster.subscribe()
    }

    public nonisolated func makeClient() -> any SessionClient { ActorClient(store: self) }

    /// Publishes the state the actor is in now, and to the snapshot the token a read would get;
    /// called after every change.
    /// `outcome`: the refresh this change ended, for the snapshot's readers that waited for it.
    private func publish(outcome: Result<AccessToken, SessionError>? = nil) {
        snapshot?.publish(
            isRevoked || inFlight != nil ? nil : grant?.accessToken, refreshing: inFlight != nil, outcome: outcome)
        let state: SessionState =
            if isRevoked { .revoked } else if let grant {
                inFlight == nil
                    ? .signedIn(generation: grant.accessToken.generation)
                    : .refreshing(generation: grant.accessToken.generation)
            } else { .signedOut }
        stateVersion &+= 1
        if let single { single.yield(state) } else { broadcaster.publish(state, version: stateVersion) }
    }

    /// The elevated token, joining the prompt in flight or starting one.
    public func elevatedToken() async throws(SessionError) -> ElevatedToken {
        _ = try currentGrant()
        if let elevated, elevated.isFresh(at: clock.now(), margin: skew) { return elevated }
        let task: ElevationTask
        if let elevation {
            task = elevation
        } else {
            let startEpoch = epoch
            task = Task { await self.stepUp(epoch: startEpoch) }
            elevation = task
        }
        let callerEpoch = epoch
        let result = await task.value
        guard callerEpoch == epoch else { throw .signedOut }
        if elevation == task {
            elevation = nil
            if case .success(let token) = result { elevated = token }
        }
        // Waiters resume on the actor one at a time: the clock may have moved past the token's
        // expiry since the step-up bought it.
        if case .success(let token) = result, !token.isFresh(at: clock.now()) { throw .stepUpFailed }
        return try result.get()
    }

    /// Prompts and buys an elevated token; runs outside the actor but for its short checks.
    private nonisolated func stepUp(epoch startEpoch: UInt64) async -> Result<ElevatedToken, SessionError> {
        await ElevationCoordinator.stepUp(
            base: { () async throws(SessionError) in try await self.validToken() }, authenticator: authenticator,
            endpoint: stepUpEndpoint, clock: clock, isCurrent: { await self.epoch == startEpoch })
    }

    public func validToken() async throws(SessionError) -> AccessToken {
        let grant = try currentGrant()
        if inFlight == nil, grant.accessToken.isFresh(at: clock.now(), margin: skew) {
            return grant.accessToken
        }
        return try await awaitRefresh()
    }

    public func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        let grant = try currentGrant()
        let current = grant.accessToken
        if token.isStale(comparedWith: current), inFlight == nil, current.isFresh(at: clock.now(), margin: skew) {
            return current
        }
        return try await awaitRefresh()
    }

    public func signIn(_ credentials: Credentials) async throws(SessionError) {
        endSession()
        let signInEpoch = epoch
        let result = await endpoint.signInResult(credentials)
        guard signInEpoch == epoch else { throw .signedOut }  // overtaken while we awaited
        switch result {
        case .success(let newGrant):
            grant = newGrant
            publish()
        case .failure: throw .signInFailed
        }
    }

    public func signOut() async { endSession() }

    private func currentGrant() throws(SessionError) -> TokenGrant {
        if isRevoked { throw .refreshTokenRevoked }
        guard let grant else { throw .signedOut }
        return grant
    }

    private func endSession() {
        epoch &+= 1
        grant = nil
        isRevoked = false
        inFlight = nil
        elevated = nil
        elevation = nil
        // The waiters of a refresh this ends get what the actor's own get: signed out.
        publish(outcome: .failure(.signedOut))
    }

    /// Joins the in-flight refresh, starting one if there is none. No `await` separates the
    /// check from the start: that is what makes it single-flight on a re-entrant actor.
    private func awaitRefresh() async throws(SessionError) -> AccessToken {
        guard let refreshToken = grant?.refreshToken else { throw .signedOut }
        let task: RefreshTask
        if let inFlight {
            task = inFlight
        } else {
            let endpoint = self.endpoint
            let clock = self.clock
            task = Task {
                let result = await endpoint.refreshResult(refreshToken)
                let fresh = (try? result.get()).map { $0.accessToken.isFresh(at: clock.now()) } ?? false
                return (result, fresh)
            }
            inFlight = task
            publish()
        }
        let callerEpoch = epoch
        let (result, freshOnArrival) = await task.value
        // Re-entered: the world may have moved on while we waited.
        guard callerEpoch == epoch else { throw .signedOut }
        let outcome: Result<AccessToken, SessionError> =
            switch result {
            case .success(let newGrant) where freshOnArrival: .success(newGrant.accessToken)
            case .success: .failure(.refreshFailed)
            case .failure(let error): .failure(SessionError(refreshFailure: error))
            }
        if inFlight == task {
            // First waiter back applies the result, once, for everyone.
            inFlight = nil
            if case .success(let newGrant) = result { grant = newGrant }
            if case .failure(.refreshTokenRevoked) = outcome { isRevoked = true }
            publish(outcome: outcome)
        }
        return try outcome.get()
    }
}

/// An API object of an ``ActorTaskStore``: holds the store, never a session.
final class ActorClient: SessionClient {
    private let store: ActorTaskStore

    init(store: ActorTaskStore) { self.store = store }

    func token() async throws(SessionError) -> AccessToken { try await store.validToken() }
    func elevatedToken() async throws(SessionError) -> ElevatedToken { try await store.elevatedToken() }
}

/// The seed ADR's state stream: one continuation, replaced by each new subscriber.
final class SingleContinuationStream: Sendable {
    private let continuation = Mutex<AsyncStream<SessionState>.Continuation?>(nil)

    func subscribe() -> AsyncStream<SessionState> {
        AsyncStream { continuation in self.continuation.withLock(visibleTo: self) { $0 = continuation } }
    }

    func yield(_ state: SessionState) { _ = continuation.withLock(visibleTo: self) { $0?.yield(state) } }
}
