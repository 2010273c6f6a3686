import Dispatch
import SessionContract
import SessionStores
import Synchronization

extension SelfTestStores {
    /// A waiter that gives up on the shared refresh after a timeout and refreshes on its own.
    static let impatientWaiter = StoreDescriptor(
        name: "impatient-waiter",
        summary:
            "single-flight, but a caller that waited 5 s for the shared refresh sends one of its own (self-test)",
        isReferenceBroken: true
    ) { ImpatientWaiterStore(configuration: $0) }

    /// Correct, but every answer reaches its caller through the main queue.
    static let mainQueueDelivery = StoreDescriptor(
        name: "main-queue-delivery",
        summary: "the mutex store, each answer delivered through DispatchQueue.main (self-test)",
        isReferenceBroken: true
    ) { MainQueueDeliveryStore(configuration: $0) }
}

/// A single-flight refresh in a task of its own, with one bug: a caller gives the shared refresh 5
/// seconds, and when no answer has come by then it refreshes on its own with the refresh token it
/// saw, though the shared refresh is still in flight with that same token (I1, and a reuse that
/// revokes the session). The paced scenarios' server answers in milliseconds, so only a slow
/// answer — one the schedule makes land after the store's own timer — shows it.
final class ImpatientWaiterStore: SessionStore {
    private typealias Refresh = Task<Result<TokenGrant, SessionError>, Never>

    private struct State {
        var grant: TokenGrant?
        var epoch = 0
        var refreshing: Refresh?
    }

    private let configuration: SessionStoreConfiguration
    private let state = Mutex(State())
    static let patience = Duration.seconds(5)

    init(configuration: SessionStoreConfiguration) { self.configuration = configuration }

    func validToken() async throws(SessionError) -> AccessToken {
        let now = configuration.clock.now()
        let step = state.withLock { state -> (AccessToken?, Refresh?, TokenGrant?, Int) in
            guard let grant = state.grant else { return (nil, nil, nil, state.epoch) }
            if grant.accessToken.isFresh(at: now, margin: configuration.refreshSkew) {
                return (grant.accessToken, nil, grant, state.epoch)
            }
            return (nil, start(&state, grant), grant, state.epoch)
        }
        return try await finish(step)
    }

    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        let now = configuration.clock.now()
        let step = state.withLock { state -> (AccessToken?, Refresh?, TokenGrant?, Int) in
            guard let grant = state.grant else { return (nil, nil, nil, state.epoch) }
            if grant.accessToken.generation > token.generation,
                grant.accessToken.isFresh(at: now, margin: configuration.refreshSkew)
            {
                return (grant.accessToken, nil, grant, state.epoch)
            }
            return (nil, start(&state, grant), grant, state.epoch)
        }
        return try await finish(step)
    }

    private func start(_ state: inout State, _ grant: TokenGrant) -> Refresh {
        if let running = state.refreshing { return running }
        let epoch = state.epoch
        let refresh = Refresh { await self.refresh(grant.refreshToken, epoch: epoch) }
        state.refreshing = refresh
        return refresh
    }

    private func finish(_ step: (AccessToken?, Refresh?, TokenGrant?, Int)) async throws(SessionError) -> AccessToken {
        let (token, refresh, grant, epoch) = step
        if let token { return token }
        guard let refresh, let grant else { throw .signedOut }
        // The bug: the shared refresh gets 5 s, then this caller sends its own.
        let waited = await withTaskGroup(of: Result<TokenGrant, SessionError>?.self) { group in
            group.addTask { await refresh.value }
            group.addTask {
                try? await Task.sleep(for: Self.patience)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        let result: Result<TokenGrant, SessionError>
        if let waited { result = waited } else { result = await self.refresh(grant.refreshToken, epoch: epoch) }
        guard state.withLock({ $0.epoch }) == epoch else { throw .signedOut }
        return try result.get().accessToken
    }

    private func refresh(_ refreshToken: RefreshToken, epoch: Int) async -> Result<TokenGrant, SessionError> {
        let result = await configuration.endpoint.refreshResult(refreshToken).mapError(
            SessionError.init(refreshFailure:))
        state.withLock { state in
            guard state.epoch == epoch else { return }
            state.refreshing = nil
            switch result {
            case .success(let next): state.grant = next
            case .failure(.refreshTokenRevoked): state.grant = nil
            case .failure: break
            }
        }
        return result
    }

    func signIn(_ credentials: Credentials) async throws(SessionError) {
        let epoch = state.withLock { state in
            state = State(grant: nil, epoch: state.epoch + 1)
            return state.epoch
        }
        let answer = await configuration.endpoint.signInResult(credentials)
        let current = state.withLock { state in
            guard state.epoch == epoch else { return false }
            if case .success(let first) = answer { state.grant = first }
            return true
        }
        guard current else { throw .signedOut }
        guard case .success = answer else { throw .signInFailed }
    }

    func signOut() async {
        state.withLock { state in state = State(grant: nil, epoch: state.epoch + 1) }
    }
}

/// The mutex store, each answer handed back through a block on the main queue, as stores that
/// publish to a UI do: correct wherever the main queue runs.
final class MainQueueDeliveryStore: SessionStore {
    private let inner: MutexStore

    init(configuration: SessionStoreConfiguration) { inner = MutexStore(configuration: configuration) }

    private func onMain() async {
        await withCheckedContinuation { (resume: CheckedContinuation<Void, Never>) in
            DispatchQueue.main.async { resume.resume() }
        }
    }

    func validToken() async throws(SessionError) -> AccessToken {
        let result: Result<AccessToken, SessionError>
        do throws(SessionError) { result = .success(try await inner.validToken()) } catch { result = .failure(error) }
        await onMain()
        return try result.get()
    }

    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        let result: Result<AccessToken, SessionError>
        do throws(SessionError) { result = .success(try await inner.tokenRejected(token)) } catch {
            result = .failure(error)
        }
        await onMain()
        return try result.get()
    }

    func currentToken() -> AccessToken? { inner.currentToken() }
    func signIn(_ credentials: Credentials) async throws(SessionError) { try await inner.signIn(credentials) }
    func signOut() async { await inner.signOut() }
}
