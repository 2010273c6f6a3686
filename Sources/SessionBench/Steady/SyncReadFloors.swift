import SessionContract

/// A floor of the synchronous read (``SyncReadDriver``): a reader that holds its thread's own
/// token. Only `currentToken()` is measured; the rest of the store answers with that token.
protocol SyncReadFloor: SynchronousTokenReading {
    var token: AccessToken { get }
}

extension SyncReadFloor {
    func validToken() async throws(SessionError) -> AccessToken { token }
    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken { self.token }
    func signIn(_ credentials: Credentials) async throws(SessionError) {}
    func signOut() async {}
}

/// The floor: a token in the reading thread's own object, returned with no synchronization.
final class PlainLoad: SyncReadFloor, @unchecked Sendable {
    let token: AccessToken

    init(token: AccessToken) { self.token = token }

    func currentToken() -> AccessToken? { token }
}

/// The floor of a correct store: the thread's own token, handed out only while the store's clock
/// reads before an instant (as a store compares with its token's fresh-until instant).
final class ClockedLoad: SyncReadFloor, @unchecked Sendable {
    let token: AccessToken
    let clock: TokenClock
    let freshUntil: Int64

    init(token: AccessToken, clock: TokenClock, freshUntil: Int64) {
        self.token = token
        self.clock = clock
        self.freshUntil = freshUntil
    }

    func currentToken() -> AccessToken? { clock.now().nanoseconds < freshUntil ? token : nil }
}
