import SessionContract
import Synchronization

extension SelfTestStores {
    /// A 401 caller that starts the shared refresh passes its own cancellation on to it.
    static let cancelsShared401 = StoreDescriptor(
        name: "cancels-shared-401",
        summary:
            "single-flight, but a 401 caller that starts the refresh cancels it when it is cancelled itself, failing every waiter (self-test)",
        isReferenceBroken: true
    ) { CancelsShared401Store(configuration: $0) }
}

/// A single-flight refresh in a task of its own, which every caller awaits, with one bug: a caller
/// whose 401 started the refresh cancels that task when it is cancelled itself (its cancellation
/// handler was written for a refresh of its own), so the refresh is dropped and every other
/// waiter gets the failure (I11). A refresh an expiry started is never cancelled: only a
/// cancellation that meets a refresh a 401 started shows it.
final class CancelsShared401Store: SessionStore {
    private typealias Refresh = Task<Result<TokenGrant, SessionError>, Never>

    private struct State {
        var grant: TokenGrant?
        /// Bumped by every sign-in and sign-out: a refresh of an earlier session publishes nothing.
        var epoch = 0
        var refreshing: Refresh?
    }

    private enum Step {
        case token(AccessToken)
        case wait(Refresh, epoch: Int, started: Bool)
        case signedOut
    }

    private let configuration: SessionStoreConfiguration
    private let state = Mutex(State())

    init(configuration: SessionStoreConfiguration) { self.configuration = configuration }

    func validToken() async throws(SessionError) -> AccessToken {
        let now = configuration.clock.now()
        let step = state.withLock { state -> Step in
            guard let grant = state.grant else { return .signedOut }
            if grant.accessToken.isFresh(at: now, margin: configuration.refreshSkew) {
                return .token(grant.accessToken)
            }
            return .wait(start(&state, grant), epoch: state.epoch, started: false)
        }
        return try await finish(step, passingOnCancellation: false)
    }

    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        let now = configuration.clock.now()
        let step = state.withLock { state -> Step in
            guard let grant = state.grant else { return .signedOut }
            if grant.accessToken.generation > token.generation,
                grant.accessToken.isFresh(at: now, margin: configuration.refreshSkew)
            {
                return .token(grant.accessToken)
            }
            let started = state.refreshing == nil
            return .wait(start(&state, grant), epoch: state.epoch, started: started)
        }
        return try await finish(step, passingOnCancellation: true)
    }

    /// The refresh running, or a new one of `grant`.
    private func start(_ state: inout State, _ grant: TokenGrant) -> Refresh {
        if let running = state.refreshing { return running }
        let epoch = state.epoch
        let refresh = Refresh { await self.refresh(grant.refreshToken, epoch: epoch) }
        state.refreshing = refresh
        return refresh
    }

    private func finish(_ step: Step, passingOnCancellation: Bool) async throws(SessionError) -> AccessToken {
        switch step {
        case .token(let token): return token
        case .signedOut: throw .signedOut
        case .wait(let refresh, let epoch, let started):
            let result: Result<TokenGrant, SessionError>
            if passingOnCancellation, started {
                // The bug: the refresh is everyone's, but this caller's cancellation ends it.
                result = await withTaskCancellationHandler {
                    await refresh.value
                } onCancel: {
                    refresh.cancel()
                }
            } else {
                result = await refresh.value
            }
            // A refresh of a session that ended meanwhile answers nobody.
            guard state.withLock({ $0.epoch }) == epoch else { throw .signedOut }
            return try result.get().accessToken
        }
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
        // A sign-in overtaken by a sign-out or another sign-in publishes nothing.
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
