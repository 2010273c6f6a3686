import SessionContract
import Synchronization

extension SelfTestStores {
    /// A single-flight refresh kept per token endpoint and session number, process-wide — the
    /// deduplicator a networking layer keeps for its requests — rather than per store: two
    /// accounts' stores on one token server, each counting its sessions from 1, share the refresh
    /// in flight, and a caller of one account is handed the other's token. One account alone
    /// never sees it.
    static let sharedFlight = StoreDescriptor(
        name: "shared-flight",
        summary:
            "single-flight per token endpoint and session number, process-wide: two accounts' stores share a refresh (self-test)",
        isReferenceBroken: true
    ) { SharedFlightStore(configuration: $0) }
}

private final class SharedFlightStore: SessionStore {
    private typealias Flight = Task<Result<TokenGrant, TokenEndpointError>, Never>

    /// The refresh in flight, by token endpoint and session number: every store of the process
    /// shares it, and each store numbers its sessions from 1.
    private static let flights = Mutex<[FlightKey: Flight]>([:])

    private struct FlightKey: Hashable {
        let endpoint: ObjectIdentifier
        let session: Int
    }

    private struct State {
        var grant: TokenGrant?
        var revoked = false
        /// Moved on by every sign-in and sign-out: a refresh of an earlier session is dropped.
        var epoch = 0
    }

    private let configuration: SessionStoreConfiguration
    private let state = Mutex(State())

    init(configuration: SessionStoreConfiguration) { self.configuration = configuration }

    func validToken() async throws(SessionError) -> AccessToken {
        let (grant, revoked, epoch) = state.withLock { ($0.grant, $0.revoked, $0.epoch) }
        guard let grant else { throw revoked ? .refreshTokenRevoked : .signedOut }
        if grant.accessToken.isFresh(at: configuration.clock.now(), margin: configuration.refreshSkew) {
            return grant.accessToken
        }
        return try await refresh(grant, epoch: epoch)
    }

    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        let (grant, revoked, epoch) = state.withLock { ($0.grant, $0.revoked, $0.epoch) }
        guard let grant else { throw revoked ? .refreshTokenRevoked : .signedOut }
        if grant.accessToken.generation != token.generation,
            grant.accessToken.isFresh(at: configuration.clock.now(), margin: configuration.refreshSkew)
        {
            return grant.accessToken
        }
        return try await refresh(grant, epoch: epoch)
    }

    private enum Plan {
        case token(AccessToken)
        case ended
        case join(Flight)
    }

    private func refresh(_ grant: TokenGrant, epoch: Int) async throws(SessionError) -> AccessToken {
        let key = FlightKey(endpoint: ObjectIdentifier(configuration.endpoint as AnyObject), session: epoch)
        let plan = Self.flights.withLock { flights -> Plan in
            if let running = flights[key] { return .join(running) }
            // No flight: unless the session moved on since the caller looked, this store starts one.
            let now = state.withLock { ($0.grant, $0.epoch) }
            guard now.1 == epoch else { return .ended }
            if let held = now.0, held.accessToken.generation != grant.accessToken.generation {
                return .token(held.accessToken)
            }
            let started = Flight {
                let result: Result<TokenGrant, TokenEndpointError>
                do throws(TokenEndpointError) {
                    result = .success(try await self.configuration.endpoint.refresh(grant.refreshToken))
                } catch { result = .failure(error) }
                self.adopt(result, epoch: epoch)
                Self.flights.withLock { _ = $0.removeValue(forKey: key) }
                return result
            }
            flights[key] = started
            return .join(started)
        }
        let flight: Flight
        switch plan {
        case .token(let token): return token
        case .ended: throw .signedOut
        case .join(let running): flight = running
        }
        let result = await flight.value
        // The flight's starter has taken its answer in; a store that joined another's takes it as its own.
        adopt(result, epoch: epoch)
        // A call belongs to the session it started in: one that ended meanwhile hands nothing out.
        guard state.withLock({ $0.epoch }) == epoch else { throw .signedOut }
        switch result {
        case .success(let next): return next.accessToken
        case .failure(let error): throw error == .invalidGrant ? .refreshTokenRevoked : .refreshFailed
        }
    }

    /// Takes a refresh's answer in, unless a sign-in or a sign-out came since.
    private func adopt(_ result: Result<TokenGrant, TokenEndpointError>, epoch: Int) {
        state.withLock { state in
            guard state.epoch == epoch else { return }
            switch result {
            case .success(let next):
                if (state.grant?.accessToken.generation ?? 0) < next.accessToken.generation { state.grant = next }
            case .failure(.invalidGrant):
                state.grant = nil
                state.revoked = true
            case .failure:
                break
            }
        }
    }

    func signIn(_ credentials: Credentials) async throws(SessionError) {
        let epoch = state.withLock { state in
            state.epoch += 1
            state.grant = nil
            state.revoked = false
            return state.epoch
        }
        let grant: TokenGrant
        do throws(TokenEndpointError) { grant = try await configuration.endpoint.signIn(credentials) } catch {
            throw .signInFailed
        }
        state.withLock { state in
            guard state.epoch == epoch else { return }
            state.grant = grant
        }
    }

    func signOut() async {
        state.withLock { state in
            state.epoch += 1
            state.grant = nil
            state.revoked = false
        }
    }
}
