/// The contract every session store implements.
///
/// A store holds one signed-in session at a time and hands out access tokens to any number
/// of concurrent callers. The semantics, which the harness checks on every run:
///
/// - ``validToken()`` returns a token that is unexpired when returned. When the current one
///   is expired or within the configured skew of expiry, the store refreshes it, and **all
///   concurrent callers share one refresh call**. A fresh token is handed out as it is: the
///   store refreshes nothing else (a token expired, within the skew, or refused by a 401).
/// - ``tokenRejected(_:)`` reports that the server answered 401 to a request made with
///   `token`. The store refreshes only if `token` is still its current token; if a newer one
///   exists it returns that without calling the server.
/// - ``signOut()`` is a fence: once it returns, no call returns a token issued before it,
///   and a refresh that completes after it is discarded (its waiters get
///   ``SessionError/signedOut``). ``signIn(_:)`` fences the previous session the same way —
///   another user's or the same user's, and whether or not the server grants the new one: a
///   sign-in the server refuses leaves the store signed out.
/// - A session the server refused (``SessionError/refreshTokenRevoked``) is over until the next
///   sign-in: no call gets its tokens any more, and nothing refreshes it.
/// - Every token handed out is the server's, as issued; within a session, generations never go
///   back.
/// - Every waiter of one refresh gets the same outcome: the same token or the same error.
/// - A waiter that is cancelled does not cancel or poison the refresh the others wait for.
public protocol SessionStore: AnyObject, Sendable {
    /// A token that is unexpired when returned, refreshing (once, for all callers) if needed.
    func validToken() async throws(SessionError) -> AccessToken

    /// The server answered 401 to a request made with `token`: returns a token to retry with.
    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken

    /// Starts a session for `credentials`, replacing any current one (which ends when the sign-in
    /// starts, granted or not). Throws ``SessionError/signInFailed`` when the server refuses or
    /// cannot complete it, ``SessionError/signedOut`` when another sign-in or sign-out overtook it.
    func signIn(_ credentials: Credentials) async throws(SessionError)

    /// Ends the session. When this returns, no call returns a token issued before it.
    func signOut() async
}

/// A refinement for stores that can answer without suspending, as request-building code
/// often needs ("available synchronously for API request headers").
public protocol SynchronousTokenReading: SessionStore {
    /// The current token if it is fresh (outside the refresh skew) and no refresh is under way;
    /// otherwise `nil`, and the caller should `await` ``SessionStore/validToken()``. A store with a
    /// fresh token and nothing under way answers with it, never `nil`.
    func currentToken() -> AccessToken?
}
