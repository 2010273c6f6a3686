import Dispatch
import SessionContract
import SessionStores
import Synchronization

extension SelfTestStores {
    /// The mutex store, its states handed to subscribers a way UI layers have shipped, wrong in
    /// one way each: only an interleaving shows it, so `explore --scenario session-states` is the
    /// search that finds them.
    static let stateStreams: [StoreDescriptor] = [
        StoreDescriptor(
            name: "states-task-per-change",
            summary: "each state change handed on by a task of its own, in whatever order they run (self-test)",
            isReferenceBroken: true, offersSynchronousRead: true, offersStateStream: true
        ) { TaskPerChangeStore(configuration: $0) },
        StoreDescriptor(
            name: "states-late-join",
            summary: "a new subscriber gets the current state now and is registered by a task later (self-test)",
            isReferenceBroken: true, offersSynchronousRead: true, offersStateStream: true
        ) { LateJoinStore(configuration: $0) },
        StoreDescriptor(
            name: "states-delayed-spinner",
            summary: "shows 'refreshing' only for a refresh over 10 ms, by publishing it 10 ms later (self-test)",
            isReferenceBroken: true, offersSynchronousRead: true, offersStateStream: true
        ) { DelayedSpinnerStore(configuration: $0) },
        StoreDescriptor(
            name: "states-announce-refresh",
            summary: "the network layer announces every refreshed token, a discarded one too (self-test)",
            isReferenceBroken: true, offersSynchronousRead: true, offersStateStream: true
        ) { AnnouncingStore(configuration: $0) },
    ]

    /// Correct state streams that take their time: the checks must wait for them as `compare` does.
    static let patientStateStreams: [StoreDescriptor] = [
        StoreDescriptor(
            name: "states-debounced",
            summary:
                "correct: states handed on 50 ms after a change, the newest only, and a new subscriber's first 50 ms after it subscribed (self-test)",
            isReferenceBroken: true, offersSynchronousRead: true, offersStateStream: true
        ) { DebouncedStore(configuration: $0) },
        StoreDescriptor(
            name: "states-main-queue",
            summary: "correct: every state handed on from DispatchQueue.main, in order (self-test)",
            isReferenceBroken: true, offersSynchronousRead: true, offersStateStream: true
        ) { MainQueueStatesStore(configuration: $0) },
    ]
}

/// The mutex store, whose states a subclass hands on to subscribers of its own: every call goes
/// to the inner store, and a task reads the inner store's states and forwards each.
class StateForwardingStore: SynchronousTokenReading, ObservableSessionStore, @unchecked Sendable {
    // SAFETY: what subclasses keep is in a Mutex or an Atomic.
    let inner: MutexStore
    /// What the inner store was made with.
    let innerConfiguration: SessionStoreConfiguration
    private let forwarding = Mutex<Task<Void, Never>?>(nil)

    required init(configuration: SessionStoreConfiguration) {
        innerConfiguration = Self.inner(configuration)
        inner = MutexStore(configuration: innerConfiguration)
        let source = inner.sessionStates()
        forwarding.withLock {
            $0 = Task { [weak self] in
                for await state in source { self?.forward(state) }
            }
        }
    }

    deinit { forwarding.withLock { $0?.cancel() } }

    /// The configuration the inner store is made with.
    class func inner(_ configuration: SessionStoreConfiguration) -> SessionStoreConfiguration { configuration }
    func forward(_ state: SessionState) {}
    func sessionStates() -> AsyncStream<SessionState> { inner.sessionStates() }

    func currentToken() -> AccessToken? { inner.currentToken() }
    func validToken() async throws(SessionError) -> AccessToken { try await inner.validToken() }
    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        try await inner.tokenRejected(token)
    }
    func signIn(_ credentials: Credentials) async throws(SessionError) { try await inner.signIn(credentials) }
    func signOut() async { await inner.signOut() }
}

/// Each change handed on by `Task { publish(state) }`, numbered as the task runs: two changes
/// close together reach subscribers in whichever order their tasks ran, the older last (I25),
/// and it stays every subscriber's latest state (I23).
private final class TaskPerChangeStore: StateForwardingStore, @unchecked Sendable {
    private let states = StateBroadcaster()
    private let versions = Atomic<UInt64>(0)

    override func forward(_ state: SessionState) {
        Task { self.states.publish(state, version: self.versions.add(1, ordering: .relaxed).newValue) }
    }
    override func sessionStates() -> AsyncStream<SessionState> { states.subscribe() }
}

/// Shows "refreshing" only if a refresh lasts over 10 ms — by publishing it 10 ms later,
/// whatever happened meanwhile: a refresh answered sooner ends with 'refreshing' after the new
/// token (I25), and it stays every subscriber's latest state (I23).
private final class DelayedSpinnerStore: StateForwardingStore, @unchecked Sendable {
    private let states = StateBroadcaster()
    private let versions = Atomic<UInt64>(0)

    override func forward(_ state: SessionState) {
        guard case .refreshing = state else { return publish(state) }
        Task {
            try? await Task.sleep(for: .milliseconds(10))
            self.publish(state)
        }
    }
    private func publish(_ state: SessionState) {
        states.publish(state, version: versions.add(1, ordering: .relaxed).newValue)
    }
    override func sessionStates() -> AsyncStream<SessionState> { states.subscribe() }
}

/// `sessionStates()` yields the current state at once and adds the subscriber to the list a
/// task later: a change in between is never sent to it, and it stays on the state before (I23).
private final class LateJoinStore: StateForwardingStore, @unchecked Sendable {
    private let hub = Mutex<(current: SessionState, subscribers: [AsyncStream<SessionState>.Continuation])>(
        (.signedOut, []))

    override func forward(_ state: SessionState) {
        hub.withLock { hub in
            hub.current = state
            for subscriber in hub.subscribers { subscriber.yield(state) }
        }
    }

    override func sessionStates() -> AsyncStream<SessionState> {
        let (stream, continuation) = AsyncStream.makeStream(of: SessionState.self)
        continuation.yield(hub.withLock { $0.current })
        Task { self.hub.withLock { $0.subscribers.append(continuation) } }
        return stream
    }
}

/// The store's own states, and beside them the network layer's "token refreshed" announcement
/// for every refresh answered, one that a sign-out or a user switch discarded too (I24).
private final class AnnouncingStore: StateForwardingStore, @unchecked Sendable {
    private let states = StateBroadcaster()
    private let versions = Atomic<UInt64>(0)

    override class func inner(_ configuration: SessionStoreConfiguration) -> SessionStoreConfiguration {
        var copy = configuration
        copy.endpoint = AnnouncingEndpoint(base: configuration.endpoint)
        return copy
    }

    required init(configuration: SessionStoreConfiguration) {
        super.init(configuration: configuration)
        (innerConfiguration.endpoint as? AnnouncingEndpoint)?.announce.withLock {
            $0 = { [weak self] state in self?.publish(state) }
        }
    }

    override func forward(_ state: SessionState) { publish(state) }
    private func publish(_ state: SessionState) {
        states.publish(state, version: versions.add(1, ordering: .relaxed).newValue)
    }
    override func sessionStates() -> AsyncStream<SessionState> { states.subscribe() }
}

private final class AnnouncingEndpoint: TokenEndpoint {
    let base: any TokenEndpoint
    let announce = Mutex<(@Sendable (SessionState) -> Void)?>(nil)

    init(base: any TokenEndpoint) { self.base = base }

    func signIn(_ credentials: Credentials) async throws(TokenEndpointError) -> TokenGrant {
        try await base.signIn(credentials)
    }

    func refresh(_ refreshToken: RefreshToken) async throws(TokenEndpointError) -> TokenGrant {
        let grant = try await base.refresh(refreshToken)
        announce.withLock { $0 }?(.signedIn(generation: grant.accessToken.generation))
        return grant
    }
}

/// Correct, and slow to say so: a change is handed on 50 ms after it came, the newest state of
/// those 50 ms only (coalesced, never reordered), and a new subscriber is added, with the state
/// then current as its first, 50 ms after it subscribed.
private final class DebouncedStore: StateForwardingStore, @unchecked Sendable {
    private struct Hub {
        var latest: SessionState = .signedOut
        var published: SessionState = .signedOut
        var armed = false
        var subscribers: [AsyncStream<SessionState>.Continuation] = []
    }
    private let hub = Mutex(Hub())
    static let delay = Duration.milliseconds(50)

    override func forward(_ state: SessionState) {
        let arm = hub.withLock { hub -> Bool in
            hub.latest = state
            defer { hub.armed = true }
            return !hub.armed
        }
        guard arm else { return }
        Task {
            try? await Task.sleep(for: Self.delay)
            self.hub.withLock { hub in
                hub.armed = false
                guard hub.latest != hub.published else { return }
                hub.published = hub.latest
                for subscriber in hub.subscribers { subscriber.yield(hub.latest) }
            }
        }
    }

    override func sessionStates() -> AsyncStream<SessionState> {
        let (stream, continuation) = AsyncStream.makeStream(of: SessionState.self)
        Task {
            try? await Task.sleep(for: Self.delay)
            self.hub.withLock { hub in
                continuation.yield(hub.published)
                hub.subscribers.append(continuation)
            }
        }
        return stream
    }
}

/// Correct: each change is handed on from the main queue, numbered when it came, so in order.
private final class MainQueueStatesStore: StateForwardingStore, @unchecked Sendable {
    private let states = StateBroadcaster()
    private let versions = Atomic<UInt64>(0)

    override func forward(_ state: SessionState) {
        let version = versions.add(1, ordering: .relaxed).newValue
        let states = self.states
        DispatchQueue.main.async { states.publish(state, version: version) }
    }
    override func sessionStates() -> AsyncStream<SessionState> { states.subscribe() }
}
