/// Every way a store's call can fail. All waiters of one refresh get the same one.
public enum SessionError: Error, Hashable, Sendable, CustomStringConvertible {
    /// No session: never signed in, signed out, the session was replaced by another sign-in
    /// while the call waited, or the server refused it (its refresh's waiters may be told this
    /// or ``refreshTokenRevoked``, all of them the same).
    case signedOut
    /// The server refused or could not complete a sign-in.
    case signInFailed
    /// The refresh failed for a reason that may pass (server error, timeout). The next call
    /// may refresh again.
    case refreshFailed
    /// The server no longer accepts this session's refresh token (revoked, or reuse was
    /// detected). The session is over until the next sign-in.
    case refreshTokenRevoked
    /// The calling task was cancelled while it waited.
    case cancelled
    /// The user failed or refused the step-up check. The next call may prompt again.
    case stepUpDenied
    /// The user dismissed the step-up prompt. The next call may prompt again.
    case stepUpDismissed
    /// The server did not sell an elevated token (a server error, a refused proof).
    case stepUpFailed

    public var description: String {
        switch self {
        case .signedOut: "signed out"
        case .signInFailed: "sign-in failed"
        case .refreshFailed: "refresh failed"
        case .refreshTokenRevoked: "refresh token revoked"
        case .cancelled: "cancelled"
        case .stepUpDenied: "step-up denied"
        case .stepUpDismissed: "step-up dismissed"
        case .stepUpFailed: "step-up failed"
        }
    }
}

extension SessionError {
    /// Whether the error is a step-up's: only ``SessionClient/elevatedToken()`` may throw it.
    public var isStepUp: Bool { self == .stepUpDenied || self == .stepUpDismissed || self == .stepUpFailed }

    /// What every waiter of a refresh is told when the token endpoint refused it with `error`:
    /// a refused grant ends the session (``refreshTokenRevoked``); a server error or a timeout
    /// may pass, and the next call may refresh again (``refreshFailed``).
    public init(refreshFailure error: TokenEndpointError) {
        switch error {
        case .invalidGrant, .invalidCredentials: self = .refreshTokenRevoked
        case .transient, .timeout: self = .refreshFailed
        }
    }
}

/// How a token endpoint call fails, as a client sees it.
public enum TokenEndpointError: Error, Hashable, Sendable {
    /// A server or network error; the same request may succeed later.
    case transient
    /// No response in time. The server may or may not have acted on the request.
    case timeout
    /// The refresh token is unknown, already used, or its family revoked (OAuth `invalid_grant`).
    case invalidGrant
    /// The credentials were refused.
    case invalidCredentials
}
