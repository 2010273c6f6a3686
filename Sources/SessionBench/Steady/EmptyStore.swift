import SessionContract

/// The cheapest possible store: one fixed token, no lock, no allocation, and no reference
/// count: its value and subject are short enough to live inside the token itself, so callers
/// on different threads share no memory they write (a shared heap string would make every
/// caller pay a contended reference count that no good store pays). The harness runs its
/// loop over it to learn its own costs.
final class EmptyStore: SynchronousTokenReading {
    private let token: AccessToken

    init(lifetime: Duration, clock: TokenClock) {
        token = AccessToken(
            value: "empty-token", subject: Subject("empty"), generation: 1, expiresAt: clock.now() + lifetime)
    }

    func currentToken() -> AccessToken? { token }
    func validToken() async throws(SessionError) -> AccessToken { token }
    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken { self.token }
    func signIn(_ credentials: Credentials) async throws(SessionError) {}
    func signOut() async {}
}
