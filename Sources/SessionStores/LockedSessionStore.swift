import SessionContract
import SessionSync
import Synchronization

/// How a parked caller is resumed: with the token or the error its refresh ended in.
public typealias TokenWaiter = CheckedContinuation<Result<AccessToken, SessionError>, Never>

/// The synchronization a lock-based store puts around its ``TokenLifecycle``.
///
/// A guard decides only *how* the lifecycle is reached; every decision about tokens is the
/// lifecycle's. Bodies are short and never suspend, so no guard is ever held across I/O.
public protocol LifecycleGuard: Sendable {
    init(_ lifecycle: TokenLifecycle<TokenWaiter>)

    /// Runs `body` with no other access to the lifecycle under way.
    func withExclusiveAccess<R: Sendable>(_ body: (inout TokenLifecycle<TokenWaiter>) -> R) -> R

    /// Runs `body` with no writer under way; readers may run together where the guard allows.
    func withSharedAccess<R: Sendable>(_ body: (borrowing TokenLifecycle<TokenWaiter>) -> R) -> R

    /// The fast path: the lifecycle's fresh token, if a caller may have it without waiting.
    /// By default a shared access; a guard may answer without touching the lifecycle at all.
    func freshToken(at now: TokenInstant) -> AccessToken?
}

extension LifecycleGuard {
    public func withSharedAccess<R: Sendable>(_ body: (borrowing TokenLifecycle<TokenWaiter>) -> R) -> R {
        withExclusiveAccess { body($0) }
    }

    public func freshToken(at now: TokenInstant) -> AccessToken? {
        withSharedAccess { $0.freshToken(at: now) }
    }
}

/// A session store whose state is a ``TokenLifecycle`` behind a ``LifecycleGuard``.
///
/// The stores built on it (`LockFreeReadStore`, `MutexStore`, `NSLockStore`,
/// `SerialQueueStore`, `BarrierQueueStore`) are this type with a different guard, so a
/// comparison between them measures synchronization and nothing else.
///
/// - Fast path: one shared access and one clock read; no allocation.
/// - Slow path: a continuation per waiter, parked in the lifecycle; one unstructured task
///   per refresh, which no waiter's cancellation can reach. Continuations are resumed after
///   the guard is released.
/// - Storage (when the configuration has one): the saved session is restored when the store
///   is made; each grant is saved before its token reaches anyone; sign-out and the start of
///   a sign-in clear it (``SessionPersistence``). Reads never touch it.
/// - Shared storage (``SharedTokenStorage``): a refresh runs in the storage's turn and reads the
///   storage again first. A newer grant saved by another holder meanwhile is taken as this
///   refresh's answer, with no server call (or, if its token has expired too, its refresh token
///   is the one presented); a storage another holder emptied ends this session as signed out.
public final class LockedSessionStore<Guard: LifecycleGuard>: SynchronousTokenReading {
    let lifecycle: Guard
    let clock: TokenClock
    let endpoint: any TokenEndpoint
    let persistence: SessionPersistence?
    let skew: Duration
    private let waiterIDs = Atomic<UInt64>(0)
    let states: StateBroadcaster
    let configuration: SessionStoreConfiguration
    let elevationMode: ElevationMode
    /// The API objects' own step-up coordinators (reference-broken ``ElevationMode/perClient``),
    /// held weakly; empty in ``ElevationMode/shared``, where every API object uses
    /// ``sharedElevation``, at which no weak reference points (a weakly referenced object counts
    /// its references on the slow path, through a side table).
    private let elevations: Mutex<[WeakElevation]>

    /// How a store's API objects share step-up authentication.
    enum ElevationMode {
        /// One prompt for every caller of every API object.
        case shared
        /// Each API object prompts for itself (seed 000's warning: "asked to supply their password
        /// or finger-print several times"). Reference-broken.
        case perClient
    }

    struct WeakElevation: @unchecked Sendable {
        weak var coordinator: ElevationCoordinator?
    }

    public convenience init(configuration: SessionStoreConfiguration) {
        self.init(configuration: configuration, persistOrder: .beforePublish)
    }

    init(
        configuration: SessionStoreConfiguration, persistOrder: SessionPersistence.Order,
        turns: SessionPersistence.Turns = .storage, elevation: ElevationMode = .shared
    ) {
        self.configuration = configuration
        elevationMode = elevation
        lifecycle = Guard(TokenLifecycle(skew: configuration.refreshSkew))
        let shared = ElevationCoordinator(configuration: configuration)
        sharedElevation = shared
        elevations = Mutex([])
        clock = configuration.clock
        endpoint = configuration.endpoint
        skew = configuration.refreshSkew
        persistence = configuration.storage.map { SessionPersistence(storage: $0, order: persistOrder, turns: turns) }
        if let grant = persistence?.restore() {
            lifecycle.withExclusiveAccess { $0.restore(grant) }
        }
        let initial = lifecycle.withSharedAccess { $0.observed }
        states = StateBroadcaster(initial.state, version: initial.version)
        if let announced = persistence?.announcements() {
            // Holds the store weakly: the listening ends with the store's storage.
            Task { [weak self] in
                for await grant in announced {
                    guard let self else { return }
                    self.adopt(grant)
                }
            }
        }
    }

    private let sharedElevation: ElevationCoordinator

    // The fast path, specialized for the built-in guards: the generic entry point jumps to a
    // body with the guard's calls inlined. Only this synchronous read: a specialized async
    // method adds a frame to every parked caller, which costs each one a new ~1 KB slab of
    // its task's allocator (seen in scale-storm: 38 -> 1,063 bytes per waiter).
    @_specialize(exported:false,where Guard == LockFreeReadGuard)
    @_specialize(exported:false,where Guard == MutexGuard)
    @_specialize(exported:false,where Guard == NSLockGuard)
    @_specialize(exported:false,where Guard == SerialQueueGuard)
    @_specialize(exported:false,where Guard == BarrierQueueGuard)
    public func currentToken() -> AccessToken? {
        lifecycle.freshToken(at: clock.now())
    }

    public func validToken() async throws(SessionError) -> AccessToken {
        if let token = currentToken() { return token }
        return try await park { lifecycle, waiter, id, now, isCancelled in
            lifecycle.acquire(waiter, id: id, now: now, isCancelled: isCancelled)
        }
    }

    public func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        // A 401 for an older token is answered like a read: the current token, no waiting.
        if let current = currentToken(), token.isStale(comparedWith: current) {
            return current
        }
        return try await park { lifecycle, waiter, id, now, isCancelled in
            lifecycle.rejected(token, waiter: waiter, id: id, now: now, isCancelled: isCancelled)
        }
    }

    public func signIn(_ credentials: Credentials) async throws(SessionError) {
        let started = ending { $0.beginSignIn() }
        // After the lifecycle moved on: a step-up that started before it is discarded here, and
        // one that starts after it finds no session to elevate.
        endElevation()
        resume(started.orphans, with: .failure(.signedOut))
        let result = await endpoint.signInResult(credentials)
        let epoch = started.epoch
        let isCurrent = { [lifecycle] in lifecycle.withSharedAccess { $0.isCurrentSignIn(epoch: epoch) } }
        try persisting(try? result.get(), isCurrent: isCurrent) {
            changing { $0.signInCompleted(epoch: epoch, result: result) }
        }.get()
    }

    public func signOut() async {
        let orphans = ending { $0.signOut() }
        endElevation()
        resume(orphans, with: .failure(.signedOut))
    }

    /// Ends the session through `event`; with storage, clears it with no save in between.
    private func ending<R: Sendable>(_ event: @escaping (inout TokenLifecycle<TokenWaiter>) -> R) -> R {
        guard let persistence else { return changing(event) }
        return persistence.end { changing(event) }
    }

    /// Runs `event` on the lifecycle, then publishes the state it left (``StateBroadcaster``
    /// drops it if a later one was published first).
    func changing<R: Sendable>(_ event: (inout TokenLifecycle<TokenWaiter>) -> R) -> R {
        let (result, observed) = lifecycle.withExclusiveAccess { lifecycle in
            let result = event(&lifecycle)
            return (result, lifecycle.observed)
        }
        states.publish(observed.state, version: observed.version)
        return result
    }

    /// Drops every API object's elevated token and fails their prompts' waiters.
    private func endElevation() {
        sharedElevation.end()
        guard elevationMode == .perClient else { return }
        let coordinators = elevations.withLock(visibleTo: self) { elevations in
            elevations.removeAll { $0.coordinator == nil }
            // A closure, not `\.coordinator`: a key path into this generic type is built at run
            // time on every call (type metadata looked up by mangled name), a tenth of explore's time.
            return elevations.compactMap { $0.coordinator }
        }
        for coordinator in coordinators { coordinator.end() }
    }

    /// Runs `publish`, which hands `grant`'s token out, with the save of `grant` before it while
    /// `isCurrent()` holds (or, for the reference-broken order, after it).
    func persisting<R>(_ grant: TokenGrant?, isCurrent: () -> Bool, publish: () -> R) -> R {
        guard let persistence, let grant else { return publish() }
        switch persistence.order {
        case .beforePublish:
            persistence.save(grant, ifCurrent: isCurrent)
            return publish()
        case .afterPublish:
            let published = publish()
            persistence.save(grant) { lifecycle.withSharedAccess { $0.holds(grant) } }
            return published
        case .unfenced:
            persistence.save(grant) { true }
            return publish()
        }
    }

    /// Parks the caller in the lifecycle through `event`, acting on what it decides.
    private func park(
        _ event:
            @escaping (inout TokenLifecycle<TokenWaiter>, TokenWaiter, UInt64, TokenInstant, Bool) ->
            TokenLifecycle<TokenWaiter>.AcquireAction
    ) async throws(SessionError) -> AccessToken {
        let id = waiterIDs.add(1, ordering: .relaxed).newValue
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: TokenWaiter) in
                // Task.isCancelled is read under the guard: a cancellation handler that ran
                // before the waiter was parked found nothing to cancel, and this sees the flag.
                let action = changing {
                    event(&$0, waiter, id, clock.now(), Task.isCancelled)
                }
                perform(action)
            }
        } onCancel: {
            if let waiter = lifecycle.withExclusiveAccess({ $0.cancelWaiter(id: id) }) {
                waiter.resume(returning: .failure(.cancelled))
            }
        }
        return try outcome.get()
    }

    private func perform(_ action: TokenLifecycle<TokenWaiter>.AcquireAction) {
        switch action {
        case .resume(let waiter, let outcome):
            waiter.resume(returning: outcome)
        case .parked:
            break
        case .startRefresh(let request):
            // Unstructured on purpose: the refresh belongs to no caller, so cancelling the
            // caller that happened to start it cancels nothing but that caller's wait.
            Task { await self.refresh(request) }
        }
    }

    func resume(_ waiters: [TokenWaiter], with outcome: Result<AccessToken, SessionError>) {
        for waiter in waiters { waiter.resume(returning: outcome) }
    }
}

extension LockedSessionStore: ObservableSessionStore, StepUpSessionStore {
    public func sessionStates() -> AsyncStream<SessionState> { states.subscribe() }

    public func makeClient() -> any SessionClient {
        switch elevationMode {
        case .shared:
            return ProxyClient(store: self, elevation: sharedElevation)
        case .perClient:
            let own = ElevationCoordinator(configuration: configuration)
            elevations.withLock(visibleTo: self) { $0.append(WeakElevation(coordinator: own)) }
            return ProxyClient(store: self, elevation: own)
        }
    }
}
