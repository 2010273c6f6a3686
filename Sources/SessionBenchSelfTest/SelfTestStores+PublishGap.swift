import SessionContract
import Synchronization

/// A single-flight refresh with one gap, a bug of depth 3: it takes two preemptions in the right
/// order, so `explore --strategy pct --depth 3` finds it and depth 2 does not (self-test).
///
/// A caller that finds the token expired and no refresh running claims the refresh token it
/// read, records that it is about to refresh (an `await`), then starts the refresh unless one is
/// running or the grant changed meanwhile. The refresh task, once answered, moves itself from
/// "refreshing" to "publishing", writes the new grant out (an `await`), then publishes it.
/// A caller arriving while it publishes waits for it; a caller that *claimed before* the refresh
/// began and resumes inside the publishing gap rechecks only "refreshing" and the grant (still
/// the old one), and so refreshes a second time with the spent refresh token: two refreshes for
/// one expiry (I1), the rotated token presented again (I7).
///
/// The two orderings it needs are the claiming caller held between its claim and its recheck
/// while another caller's refresh is answered, and the refresh task held in its gap while that
/// caller resumes; with no preemption (PCT depth 1) or one (depth 2) the gap is never seen.
final class GapBeforePublishStore: SessionStore {
    private typealias Refresh = Task<Result<TokenGrant, SessionError>, Never>

    private struct State {
        var grant: TokenGrant?
        /// Bumped by every sign-in and sign-out: a refresh of an earlier session publishes nothing.
        var epoch = 0
        var refreshing: Refresh?
        var publishing: Refresh?
    }

    private enum Step {
        case token(AccessToken)
        case wait(Refresh)
        case claim(RefreshToken, epoch: Int)
        case signedOut
    }

    private let configuration: SessionStoreConfiguration
    private let state = Mutex(State())

    init(configuration: SessionStoreConfiguration) { self.configuration = configuration }

    func validToken() async throws(SessionError) -> AccessToken {
        while true {
            let now = configuration.clock.now()
            let step = state.withLock { state -> Step in
                guard let grant = state.grant else { return .signedOut }
                if grant.accessToken.isFresh(at: now, margin: configuration.refreshSkew) {
                    return .token(grant.accessToken)
                }
                if let running = state.refreshing ?? state.publishing { return .wait(running) }
                return .claim(grant.refreshToken, epoch: state.epoch)
            }
            switch step {
            case .token(let token): return token
            case .signedOut: throw .signedOut
            case .wait(let running): return try await running.value.get().accessToken
            case .claim(let claimed, let epoch):
                // Records the refresh it is about to start.
                await Task.yield()
                let started = state.withLock { state -> Refresh? in
                    // The recheck: a refresh running, or the grant changed. A grant being
                    // published is not looked at: the gap.
                    guard state.epoch == epoch, state.grant?.refreshToken == claimed else { return nil }
                    if let running = state.refreshing { return running }
                    let refresh = Refresh { await self.refresh(claimed, epoch: epoch) }
                    state.refreshing = refresh
                    return refresh
                }
                guard let started else { continue }
                return try await started.value.get().accessToken
            }
        }
    }

    private func refresh(_ claimed: RefreshToken, epoch: Int) async -> Result<TokenGrant, SessionError> {
        let result = await configuration.endpoint.refreshResult(claimed).mapError(SessionError.init(refreshFailure:))
        state.withLock { state in
            guard state.epoch == epoch else { return }
            state.publishing = state.refreshing
            state.refreshing = nil
        }
        // Writes the new grant out before publishing it.
        await Task.yield()
        state.withLock { state in
            guard state.epoch == epoch else { return }
            state.publishing = nil
            switch result {
            case .success(let next): state.grant = next
            case .failure(.refreshTokenRevoked): state.grant = nil
            case .failure: break
            }
        }
        return result
    }

    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken { try await validToken() }

    func signIn(_ credentials: Credentials) async throws(SessionError) {
        guard case .success(let first) = await configuration.endpoint.signInResult(credentials) else {
            throw .signInFailed
        }
        state.withLock { state in
            state = State(grant: first, epoch: state.epoch + 1)
        }
    }

    func signOut() async {
        state.withLock { state in
            state = State(grant: nil, epoch: state.epoch + 1)
        }
    }
}
