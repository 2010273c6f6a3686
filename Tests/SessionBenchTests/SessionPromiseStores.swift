import SessionContract
import SessionSync
import SessionStores
import Synchronization

/// Stores wrong in one way each about step-up, API objects or observable state. Each wraps a
/// correct `MutexStore` and breaks one promise on top of it.
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

    /// Prompts and buys an elevated token, no coordination at all.
    func promptAndElevate() async throws(SessionError) -> ElevatedToken {
        let token = try await inner.validToken()
        guard let authenticator = configuration.authenticator,
            let endpoint = configuration.endpoint as? any StepUpEndpoint
        else { throw .stepUpFailed }
        switch await authenticator.prompt(for: token.subject) {
        case .denied: throw .stepUpDenied
        case .dismissed: throw .stepUpDismissed
        case .approved(let proof):
            do throws(TokenEndpointError) { return try await endpoint.elevate(token, proof: proof) } catch {
                throw .stepUpFailed
            }
        }
    }
}

/// A client of a ``PromiseStore`` whose calls are given as closures.
final class ClosureClient: SessionClient, @unchecked Sendable {
    let tokenBody: @Sendable () async throws(SessionError) -> AccessToken
    let elevatedBody: @Sendable () async throws(SessionError) -> ElevatedToken

    init(
        token: @escaping @Sendable () async throws(SessionError) -> AccessToken,
        elevated: @escaping @Sendable () async throws(SessionError) -> ElevatedToken
    ) {
        tokenBody = token
        elevatedBody = elevated
    }

    func token() async throws(SessionError) -> AccessToken { try await tokenBody() }
    func elevatedToken() async throws(SessionError) -> ElevatedToken { try await elevatedBody() }
}

/// I18: check the cached elevated token, then prompt: every concurrent caller prompts.
final class CheckThenPromptStore: PromiseStore, @unchecked Sendable {
    let cached = Mutex<ElevatedToken?>(nil)
    override func signOut() async {
        cached.withLock(visibleTo: self) { $0 = nil }
        await inner.signOut()
    }
    override func signIn(_ credentials: Credentials) async throws(SessionError) {
        cached.withLock(visibleTo: self) { $0 = nil }
        try await inner.signIn(credentials)
    }
    override func makeClient() -> any SessionClient {
        ClosureClient(token: { () async throws(SessionError) in try await self.inner.validToken() }) {
            () async throws(SessionError) in
            if let token = self.cached.withLock(visibleTo: self, { $0 }), token.isFresh(at: self.configuration.clock.now()) {
                return token
            }
            let token = try await self.promptAndElevate()
            self.cached.withLock(visibleTo: self) { $0 = token }
            return token
        }
    }
}

/// I19: remembers a denial and refuses every later step-up without asking again.
final class StickyDenialStore: PromiseStore, @unchecked Sendable {
    let refused = Mutex<SessionError?>(nil)
    override func makeClient() -> any SessionClient {
        let client = inner.makeClient()
        return ClosureClient(token: { () async throws(SessionError) in try await client.token() }) {
            () async throws(SessionError) in
            if let refused = self.refused.withLock(visibleTo: self, { $0 }) { throw refused }
            do throws(SessionError) { return try await client.elevatedToken() } catch {
                if error.isStepUp { self.refused.withLock(visibleTo: self) { $0 = error } }
                throw error
            }
        }
    }
}

/// I11: a request whose task is cancelled while the prompt is open is told the user dismissed
/// it, as if the cancellation were the user's answer.
final class CancelledAsDismissedStore: PromiseStore, @unchecked Sendable {
    override func makeClient() -> any SessionClient {
        let client = inner.makeClient()
        return ClosureClient(token: { () async throws(SessionError) in try await client.token() }) {
            () async throws(SessionError) in
            do throws(SessionError) { return try await client.elevatedToken() } catch {
                throw error == .cancelled ? .stepUpDismissed : error
            }
        }
    }
}

/// I20: drops the elevated token on sign-out, but keeps it across another user's sign-in.
final class ElevationSurvivesSwitchStore: PromiseStore, @unchecked Sendable {
    let cached = Mutex<ElevatedToken?>(nil)
    override func signOut() async {
        cached.withLock(visibleTo: self) { $0 = nil }
        await inner.signOut()
    }
    override func makeClient() -> any SessionClient {
        let client = inner.makeClient()
        return ClosureClient(token: { () async throws(SessionError) in try await client.token() }) {
            () async throws(SessionError) in
            if let token = self.cached.withLock(visibleTo: self, { $0 }), token.isFresh(at: self.configuration.clock.now()) {
                return token
            }
            let token = try await client.elevatedToken()
            self.cached.withLock(visibleTo: self) { $0 = token }
            return token
        }
    }
}

/// I21: one async queue for every auth operation, so a read waits while the user answers a prompt.
final class OneAuthQueueStore: PromiseStore, @unchecked Sendable {
    let queue = AsyncQueue()
    override func validToken() async throws(SessionError) -> AccessToken {
        await queue.acquire()
        defer { queue.release() }
        return try await inner.validToken()
    }
    override func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        await queue.acquire()
        defer { queue.release() }
        return try await inner.tokenRejected(token)
    }
    override func makeClient() -> any SessionClient {
        let client = inner.makeClient()
        return ClosureClient(token: { () async throws(SessionError) in try await self.validToken() }) {
            () async throws(SessionError) in
            await self.queue.acquire()
            defer { self.queue.release() }
            return try await client.elevatedToken()
        }
    }
}

/// A first-come lock for async code.
final class AsyncQueue: Sendable {
    private let state = Mutex<(busy: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))
    func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock(visibleTo: self) { state -> Bool in
                if !state.busy {
                    state.busy = true
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }
    func release() {
        let next = state.withLock(visibleTo: self) { state -> CheckedContinuation<Void, Never>? in
            if state.waiting.isEmpty {
                state.busy = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}

/// I22: an API object keeps the first token it got while it is fresh: after a user switch it
/// still sends the previous user's.
final class TokenCapturingClientStore: PromiseStore, @unchecked Sendable {
    override func makeClient() -> any SessionClient {
        let captured = TokenBox()
        let client = inner.makeClient()
        let clock = configuration.clock
        return ClosureClient(token: { () async throws(SessionError) in
            if let token = captured.token.withLock(visibleTo: captured, { $0 }), token.isFresh(at: clock.now()) { return token }
            let token = try await client.token()
            captured.token.withLock(visibleTo: captured) { $0 = token }
            return token
        }) { () async throws(SessionError) in try await client.elevatedToken() }
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

final class TokenBox: Sendable {
    let token = Mutex<AccessToken?>(nil)
}
