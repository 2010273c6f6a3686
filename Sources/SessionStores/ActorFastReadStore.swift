import SessionContract
import SessionSync
import Synchronization

/// The actor kept, its tax lost: ``ActorTaskStore``'s actor owns refresh, sign-in and sign-out,
/// and publishes every token it would hand out into a ``TokenSnapshot`` that reads answer from
/// without a hop.
///
/// - Guarantee: the full contract, as ``ActorTaskStore`` keeps it. The actor publishes after
///   every change it makes (refresh started or applied, sign-in, sign-out, revocation) and
///   before the call that made it returns; the snapshot holds a token only while the actor
///   itself would answer a read with it (signed in, not revoked, no refresh in flight, fresh
///   outside the skew). So a snapshot read never hands out what the actor would not, and
///   sign-out stays a fence: once it returns, every read goes to the actor and is told
///   ``SessionError/signedOut``. Everything else — the 401 that needs a refresh, a token that
///   is due, step-up, state — is the actor's, single-flight because its check and its `Task`
///   start share one actor turn.
/// - Cost model: a fresh read, `validToken()` or `currentToken()`, is what a
///   ``LockFreeReadStore`` read is — a thread-local load, an acquire load of a version nobody
///   writes between token changes, a clock read, one compare and a retain of the thread's own
///   token copy: no hop, no lock, no allocation. A thread's first read after each change copies
///   the token (one allocation) and takes the snapshot's lock once. A read that misses while a
///   refresh is under way waits for that refresh's outcome in the snapshot (a continuation, no
///   hop); any other miss (token due, signed out, revoked) pays the actor hop, as every
///   `ActorTaskStore` call does.
/// - Writers under a read storm: readers that miss during a refresh wait in the snapshot, not in
///   the actor's mailbox, so the actor's queue holds only the caller that started the refresh,
///   and the actor hands the readers the outcome its own waiters get when it applies it. Under 64
///   async readers on 2 cores a 401 waits about 65 µs at the median (it waited about 20 ms when
///   every missing reader queued on the actor, the caller that started the refresh resumed last),
///   against 1.1 ms for ``LockFreeReadStore`` (`writes-under-reads`).
/// - Known weakness: one cached token per thread, shared with ``LockFreeReadStore``'s, so a thread
///   alternating between two such stores misses every time. The caller that started a refresh,
///   and any that reached the actor before it published the refresh, are released only when the
///   refresh task returns, even after sign-out or their own cancellation (the actor's own
///   weakness); a hung token server hangs them. Readers waiting in the snapshot leave at once
///   when cancelled, and are told ``SessionError/signedOut`` when sign-out ends the refresh.
public final class ActorFastReadStore: SynchronousTokenReading, ObservableSessionStore, StepUpSessionStore {
    private let actor: ActorTaskStore
    private let snapshot: TokenSnapshot
    private let clock: TokenClock

    public init(configuration: SessionStoreConfiguration) {
        let snapshot = TokenSnapshot(skew: configuration.refreshSkew)
        self.snapshot = snapshot
        clock = configuration.clock
        actor = ActorTaskStore(configuration: configuration, snapshot: snapshot)
    }

    public func currentToken() -> AccessToken? { snapshot.freshToken(at: clock.now()) }

    public func validToken() async throws(SessionError) -> AccessToken {
        if let token = currentToken() { return token }
        return try await missedRead()
    }

    /// A read the snapshot could not answer: the outcome of the refresh under way, or the actor's
    /// answer. Out of line, so that the fast path stays one await the caller's frame inlines.
    @inline(never)
    private func missedRead() async throws(SessionError) -> AccessToken {
        if let outcome = await snapshot.refreshOutcome() { return try outcome.get() }
        return try await actor.validToken()
    }

    public func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        // A 401 for an older token is answered like a read: the current token, no hop.
        if let current = currentToken(), token.isStale(comparedWith: current) { return current }
        // With a refresh under way the actor would join it: so does the snapshot.
        if let outcome = await snapshot.refreshOutcome() { return try outcome.get() }
        return try await actor.tokenRejected(token)
    }

    public func signIn(_ credentials: Credentials) async throws(SessionError) { try await actor.signIn(credentials) }

    public func signOut() async { await actor.signOut() }

    public func sessionStates() -> AsyncStream<SessionState> { actor.sessionStates() }

    public func makeClient() -> any SessionClient { FastReadClient(store: self, actor: actor) }

    /// An API object: ordinary tokens through the snapshot, step-up through the actor.
    final class FastReadClient: SessionClient {
        private let store: ActorFastReadStore
        private let actor: ActorTaskStore

        init(store: ActorFastReadStore, actor: ActorTaskStore) {
            self.store = store
            self.actor = actor
        }

        func token() async throws(SessionError) -> AccessToken { try await store.validToken() }
        func elevatedToken() async throws(SessionError) -> ElevatedToken { try await actor.elevatedToken() }
    }
}

/// The token an actor lets every thread read without a hop: the actor publishes what it would
/// answer a read with (or `nil`), and readers keep per-thread copies checked against the
/// published version with one acquire load (``ReaderSlot``).
public final class TokenSnapshot: Sendable {
    /// A reader waiting for the outcome of the refresh under way; `nil` sends it to the actor.
    private typealias Waiter = CheckedContinuation<Result<AccessToken, SessionError>?, Never>

    private struct Entry: Sendable {
        var version: UInt64 = 0
        var token: AccessToken?
        /// The instant (nanoseconds) from which `token` counts as expired, skew included.
        var freshUntil: Int64 = .min
        /// Whether the actor has a refresh under way: a reader that misses then waits here for its
        /// outcome instead of in the actor's mailbox.
        var refreshing = false
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0
    }

    private let entry = Mutex(Entry())
    private let published = Atomic<UInt64>(0)
    private let publisherID = nextPublisherID.add(1, ordering: .relaxed).newValue
    private let skewNanoseconds: Int64

    public init(skew: Duration) { skewNanoseconds = skew.nanosecondsClamped }

    /// Makes `token` what readers get while it is fresh; `nil` sends every reader to the actor
    /// (or, while `refreshing`, to ``refreshOutcome()``). The new version is stored (release)
    /// before this returns. A publish that ends a refresh hands the readers waiting for it
    /// `outcome`, the one the actor's own waiters get; without one they go to the actor.
    public func publish(
        _ token: AccessToken?, refreshing: Bool = false, outcome: Result<AccessToken, SessionError>? = nil
    ) {
        let released = entry.withLock(visibleTo: self) { entry -> [Waiter] in
            entry.version &+= 1
            entry.token = token
            entry.freshUntil = token?.freshUntil(skew: skewNanoseconds) ?? .min
            entry.refreshing = refreshing
            published.store(entry.version, ordering: .releasing)
            guard !refreshing, !entry.waiters.isEmpty else { return [] }
            defer { entry.waiters = [:] }
            return entry.waiters.sorted { $0.key < $1.key }.map(\.value)
        }
        for waiter in released { waiter.resume(returning: outcome) }
    }

    /// The published token if it is fresh at `now`.
    public func freshToken(at now: TokenInstant) -> AccessToken? {
        ReaderSlot.read(publisher: publisherID, published: published.load(ordering: .acquiring), at: now) {
            entry.withLock(visibleTo: self) { entry in
                guard let token = entry.token, now.nanoseconds < entry.freshUntil else { return nil }
                return (entry.version, token, entry.freshUntil)
            }
        }
    }

    /// Readers waiting in ``refreshOutcome()`` now.
    public var waitingCount: Int { entry.withLock(visibleTo: self) { $0.waiters.count } }

    /// Waits for the outcome of the refresh under way, without a hop to the actor, whose mailbox
    /// then stays free for the caller that started it; `nil` at once when there is none (or when
    /// the refresh ended with no outcome to hand on): ask the actor. A waiter that is cancelled
    /// leaves with ``SessionError/cancelled``; the refresh goes on for the others.
    public func refreshOutcome() async -> Result<AccessToken, SessionError>? {
        // The refresh seen here is the one waited for: its version is checked again before
        // parking, so a reader held up between the two never waits for a later session's refresh.
        guard
            let (id, seen) = entry.withLock(
                visibleTo: self,
                { entry -> (UInt64, UInt64)? in
                    guard entry.refreshing else { return nil }
                    entry.nextWaiter &+= 1
                    return (entry.nextWaiter, entry.version)
                })
        else { return nil }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: Waiter) in
                // Task.isCancelled is read under the lock: a cancellation handler that ran before
                // the waiter was parked found nothing to resume, and this sees the flag.
                let answer: Result<AccessToken, SessionError>?? = entry.withLock(visibleTo: self) { entry in
                    guard entry.refreshing, entry.version == seen else { return .some(nil) }
                    if Task.isCancelled { return .some(.failure(.cancelled)) }
                    entry.waiters[id] = waiter
                    return .none
                }
                if case .some(let answer) = answer { waiter.resume(returning: answer) }
            }
        } onCancel: {
            let waiter = entry.withLock(visibleTo: self) { $0.waiters.removeValue(forKey: id) }
            waiter?.resume(returning: .failure(.cancelled))
        }
    }
}
