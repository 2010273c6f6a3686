import SessionContract

/// **Reference-broken.** The seed ADR's `SessionController` exactly as written: check the
/// token, `await` the refresh, store the result.
///
/// It is kept so that the harness can show it failing: actors are re-entrant across
/// `await`, so while the first caller waits for the server the next caller finds the same
/// expired token and starts its own refresh. N concurrent callers make N refresh calls; on a
/// rotating server the second redeems an already-used refresh token, which revokes the whole
/// session. A refresh that completes after sign-out writes its tokens back (resurrection).
///
/// - Guarantee: data-race freedom only.
/// - Cost model: an actor hop per call; one server call per caller on expiry.
/// - Known weakness: not single-flight, no sign-out fence, failures not shared.
public actor NaiveActorStore: SessionStore {
    private let api: any TokenEndpoint
    private let clock: TokenClock
    private let skew: Duration
    private var tokens: TokenGrant?

    public init(configuration: SessionStoreConfiguration) {
        api = configuration.endpoint
        clock = configuration.clock
        skew = configuration.refreshSkew
    }

    public func validToken() async throws(SessionError) -> AccessToken {
        guard let tokens else { throw .signedOut }
        if tokens.accessToken.isFresh(at: clock.now(), margin: skew) { return tokens.accessToken }
        return try await refreshTokenIfNeeded()
    }

    public func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        try await refreshTokenIfNeeded()
    }

    public func signIn(_ credentials: Credentials) async throws(SessionError) {
        do throws(TokenEndpointError) {
            setTokens(try await api.signIn(credentials))
        } catch {
            throw .signInFailed
        }
    }

    public func signOut() async { tokens = nil }

    // "Actor isolation ensures no concurrent refreshes" — it does not.
    private func refreshTokenIfNeeded() async throws(SessionError) -> AccessToken {
        guard let refreshToken = tokens?.refreshToken else { throw .signedOut }
        let newTokens: TokenGrant
        do throws(TokenEndpointError) {
            newTokens = try await api.refresh(refreshToken)
        } catch .invalidGrant {
            throw .refreshTokenRevoked
        } catch {
            throw .refreshFailed
        }
        setTokens(newTokens)
        return newTokens.accessToken
    }

    private func setTokens(_ newTokens: TokenGrant) { tokens = newTokens }
}
