/// The token server as a store sees it: the two OAuth calls a session needs.
///
/// The simulated server in the `TokenServer` module implements it; so can a client for a
/// real server, or a test double.
public protocol TokenEndpoint: Sendable {
    /// Exchanges credentials for a first grant (an authorization-code or password grant).
    func signIn(_ credentials: Credentials) async throws(TokenEndpointError) -> TokenGrant

    /// Redeems `refreshToken` for a new grant. On a rotating server a refresh token can be
    /// redeemed once; presenting it again revokes the whole session.
    func refresh(_ refreshToken: RefreshToken) async throws(TokenEndpointError) -> TokenGrant
}

extension TokenEndpoint {
    /// `signIn` as a `Result`, for code that hands the outcome across a lock or a task.
    public func signInResult(_ credentials: Credentials) async -> Result<TokenGrant, TokenEndpointError> {
        do throws(TokenEndpointError) { return .success(try await signIn(credentials)) } catch {
            return .failure(error)
        }
    }

    /// `refresh` as a `Result`, for code that hands the outcome across a lock or a task.
    public func refreshResult(_ refreshToken: RefreshToken) async -> Result<TokenGrant, TokenEndpointError> {
        do throws(TokenEndpointError) { return .success(try await refresh(refreshToken)) } catch {
            return .failure(error)
        }
    }
}
