import SessionContract
import SessionStores

extension SelfTestStores {
    /// The mutex store, except that every 401 refreshes the token it holds now, whichever token
    /// the 401 was for; it says so in its descriptor, so its I6 findings are known, not failures
    /// (docs/expectations.md): a store whose only findings are declared must pass every command.
    static let declaresUnconditional401 = StoreDescriptor(
        name: "declares-401-refresh",
        summary: "the mutex store, refreshing on every 401, and declaring it (self-test)",
        isReferenceBroken: true, refreshesUnconditionallyOn401: true
    ) { UnconditionalRejectionStore(configuration: $0) }
}

/// Refreshes on every 401: a 401 for an older token is taken as one for the current token.
private final class UnconditionalRejectionStore: SessionStore {
    private let inner: MutexStore

    init(configuration: SessionStoreConfiguration) { inner = MutexStore(configuration: configuration) }

    func validToken() async throws(SessionError) -> AccessToken { try await inner.validToken() }

    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        try await inner.tokenRejected(inner.currentToken() ?? token)
    }

    func signIn(_ credentials: Credentials) async throws(SessionError) { try await inner.signIn(credentials) }
    func signOut() async { await inner.signOut() }
}
