import SessionContract
import SessionSync

/// The protected resource beside the token endpoint: a bearer token is accepted while it is
/// unexpired and its session live, and refused otherwise (RFC 6750 §3.1 `invalid_token`). Only
/// a server reached by bearer value (over HTTP) needs it, so a server keeps the access tokens it
/// issues only once ``keepAccessTokens()`` is called.
extension TokenServer {
    /// Why a bearer token was refused.
    public enum Rejection: String, Sendable, Hashable, Codable {
        /// The server never issued it (or issued it before it started keeping tokens).
        case unknown
        /// Its lifetime is over.
        case expired
        /// Its session was revoked (reuse detected, or by an administrator).
        case revoked
    }

    /// From now on, keeps every access token issued, so ``checkAccess(_:)`` and
    /// ``accessToken(value:)`` know them.
    public func keepAccessTokens() {
        state.withLock(visibleTo: self) { $0.keepsAccessTokens = true }
    }

    /// The access token issued with `value`, if this server issued it and still knows it.
    public func accessToken(value: String) -> AccessToken? {
        state.withLock(visibleTo: self) { $0.accessTokens[value] }
    }

    /// A request to the protected resource with bearer `value`: accepted (`nil`) or refused, and
    /// why. Refusals land in the ledger's ``Ledger/resourceRejections``; acceptances are counted.
    public func checkAccess(_ value: String) -> Rejection? {
        state.withLock(visibleTo: self) { state in
            let now = clock.now()
            guard let token = state.accessTokens[value] else {
                state.ledger.rejectResource(ResourceRejection(at: now, family: 0, generation: nil, reason: .unknown))
                return .unknown
            }
            let family = state.familyOfGeneration[token.generation] ?? 0
            let reason: Rejection? =
                if state.families[family]?.isRevoked == true { .revoked } else if !token.isFresh(at: now) {
                    .expired
                } else { nil }
            if let reason {
                state.ledger.rejectResource(
                    ResourceRejection(at: now, family: family, generation: token.generation, reason: reason))
            } else {
                state.ledger.resourceAccepted += 1
            }
            return reason
        }
    }

    /// The instant on the server's clock, for expiry in seconds from now.
    public func now() -> TokenInstant { clock.now() }
}

/// A request the protected resource refused. Holds no token value: the family and generation
/// are enough to tell a stale 401 from a current one.
public struct ResourceRejection: Sendable, Hashable {
    /// When the resource refused it, on the server's clock.
    public let at: TokenInstant
    /// The token's family; 0 for a token the server does not know.
    public let family: UInt64
    /// The refused token's generation; `nil` for a token the server does not know.
    public let generation: UInt64?
    public let reason: TokenServer.Rejection
}
