import SessionContract
import SessionStores
import SessionSync
import Synchronization

/// Stores wrong in one way each about observable state. Each wraps a correct `MutexStore` and
/// breaks one promise on top of it. (The step-up ones are self-test stores, `explore` runs them.)
class PromiseStore: StepUpSessionStore, ObservableSessionStore, @unchecked Sendable {
    // SAFETY: subclasses keep their own state in Mutex/Atomic.
    let inner: MutexStore
    let configuration: SessionStoreConfiguration
    /// What the inner store was made with.
    let innerConfiguration: SessionStoreConfiguration

    required init(configuration: SessionStoreConfiguration) {
        self.configuration = configuration
        innerConfiguration = Self.innerConfiguration(configuration)
        inner = MutexStore(configuration: innerConfiguration)
        setUp()
    }

    class func innerConfiguration(_ configuration: SessionStoreConfiguration) -> SessionStoreConfiguration {
        configuration
    }
    func setUp() {}

    func validToken() async throws(SessionError) -> AccessToken { try await inner.validToken() }
    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        try await inner.tokenRejected(token)
    }
    func signIn(_ credentials: Credentials) async throws(SessionError) { try await inner.signIn(credentials) }
    func signOut() async { await inner.signOut() }
    func makeClient() -> any SessionClient { inner.makeClient() }
    func sessionStates() -> AsyncStream<SessionState> { inner.sessionStates() }

    static func descriptor(_ name: String) -> StoreDescriptor {
        StoreDescriptor(
            name: name, summary: "wrong on purpose", isReferenceBroken: true, offersStepUp: true,
            offersStateStream: true
        ) { Self(configuration: $0) }
    }
}

/// A store that republishes its inner store's states through a broadcaster of its own, with
/// versions taken when it publishes (so nothing it publishes is dropped as old).
class RepublishingStore: PromiseStore, @unchecked Sendable {
    let states = StateBroadcaster()
    let versions = Atomic<UInt64>(0)
    let forwarding = Mutex<Task<Void, Never>?>(nil)

    override func setUp() {
        let source = inner.sessionStates()
        forwarding.withLock(visibleTo: self) {
            $0 = Task { [weak self] in
                for await state in source { self?.forward(state) }
            }
        }
    }
    deinit { forwarding.withLock(visibleTo: self) { $0?.cancel() } }

    func forward(_ state: SessionState) { publish(state) }
    func publish(_ state: SessionState) {
        states.publish(state, version: versions.add(1, ordering: .relaxed).newValue)
    }
    override func sessionStates() -> AsyncStream<SessionState> { states.subscribe() }
}

/// I24: the network layer announces every refreshed token ("token refreshed" notification),
/// including one whose refresh a sign-out discarded.
final class NetworkAnnouncesRefreshStore: RepublishingStore, @unchecked Sendable {
    override class func innerConfiguration(_ configuration: SessionStoreConfiguration) -> SessionStoreConfiguration {
        var copy = configuration
        copy.endpoint = AnnouncingEndpoint(base: configuration.endpoint)
        return copy
    }
    override func setUp() {
        super.setUp()
        let endpoint = innerConfiguration.endpoint as? AnnouncingEndpoint
        endpoint?.announce.withLock(visibleTo: endpoint!) {
            $0 = { [weak self] state in self?.publish(state) }
        }
    }
}

final class AnnouncingEndpoint: StepUpEndpoint {
    let base: any TokenEndpoint
    let announce = Mutex<(@Sendable (SessionState) -> Void)?>(nil)
    init(base: any TokenEndpoint) { self.base = base }
    func signIn(_ credentials: Credentials) async throws(TokenEndpointError) -> TokenGrant {
        try await base.signIn(credentials)
    }
    func refresh(_ refreshToken: RefreshToken) async throws(TokenEndpointError) -> TokenGrant {
        let grant = try await base.refresh(refreshToken)
        announce.withLock(visibleTo: self) { $0 }?(.signedIn(generation: grant.accessToken.generation))
        return grant
    }
    func elevate(_ accessToken: AccessToken, proof: StepUpProof) async throws(TokenEndpointError) -> ElevatedToken {
        guard let base = base as? any StepUpEndpoint else { throw .invalidGrant }
        return try await base.elevate(accessToken, proof: proof)
    }
}

/// I25: shows "refreshing" only if a refresh lasts over 10 ms — by publishing it 10 ms later,
/// whatever happened meanwhile.
final class DelayedSpinnerStore: RepublishingStore, @unchecked Sendable {
    override func forward(_ state: SessionState) {
        guard case .refreshing = state else { return publish(state) }
        Task {
            try? await Task.sleep(for: .milliseconds(10))
            self.publish(state)
        }
    }
}
