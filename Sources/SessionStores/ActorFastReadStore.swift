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
///   the token (one allocation) and takes the snapshot's lock once. A read that misses (token
///   due, refresh under way, signed out) pays the actor hop, as every `ActorTaskStore` call does.
/// - Known weakness: a write — a 401 that needs a refresh, sign-in, sign-out — takes several actor
///   hops, and each one waits its turn on the cooperative pool behind every runnable reader task,
///   which never suspends on a fresh read: with 64 async readers on 2 cores a 401 waited about 22 ms
///   at the median, against 1.1 ms for ``LockFreeReadStore`` and 0.11 ms for ``ActorTaskStore``,
///   whose readers hop too (`writes-under-reads`, results/writes-under-reads.csv). Readers on OS
///   threads do not hold it up. One cached token per thread, shared with ``LockFreeReadStore``'s,
///   so a thread alternating between two such stores misses every time. Waiters are released only
///   when the refresh task returns, even after sign-out or their own cancellation (the actor's
///   own weakness); a hung token server hangs them all.
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
        return try await actor.validToken()
    }

    public func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        // A 401 for an older token is answered like a read: the current token, no hop.
        if let current = currentToken(), token.isStale(comparedWith: current) { return current }
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
    private struct Entry: Sendable {
        var version: UInt64 = 0
        var token: AccessToken?
        /// The instant (nanoseconds) from which `token` counts as expired, skew included.
        var freshUntil: Int64 = .min
    }

    private let entry = Mutex(Entry())
    private let published = Atomic<UInt64>(0)
    private let publisherID = nextPublisherID.add(1, ordering: .relaxed).newValue
    private let skewNanoseconds: Int64

    public init(skew: Duration) { skewNanoseconds = skew.nanosecondsClamped }

    /// Makes `token` what readers get while it is fresh; `nil` sends every reader to the actor.
    /// The new version is stored (release) before this returns.
    public func publish(_ token: AccessToken?) {
        entry.withLock(visibleTo: self) { entry in
            entry.version &+= 1
            entry.token = token
            entry.freshUntil = token?.freshUntil(skew: skewNanoseconds) ?? .min
            published.store(entry.version, ordering: .releasing)
        }
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
}
