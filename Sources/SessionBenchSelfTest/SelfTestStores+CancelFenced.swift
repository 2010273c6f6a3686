import SessionContract

extension SelfTestStores {
    static let cancelFenced = StoreDescriptor(
        name: "cancel-fenced",
        summary:
            "an actor whose detached refresh a sign-out cancels, with a gap between the check and the landing (self-test)",
        isReferenceBroken: true
    ) { CancelFencedStore(configuration: $0) }
}

/// BUG (deliberate) — breaks "`signOut()` is a fence: once it returns, no call returns a token
/// issued before it, and a refresh that completes after it is discarded (its waiters get
/// `signedOut`)" (contract.md I8).
///
/// An actor whose refresh is a detached `Task` that stores its own result. The fence is task
/// cancellation: `signOut()` (and `signIn(_:)`) cancel the refresh in flight, and the refresh,
/// once the server answered, drops the answer if it was cancelled. The check and the write are
/// two steps, though — the task checks `Task.isCancelled`, saves the grant to the app's keychain
/// actor (persist before publish), then hops onto the actor to store the grant. A sign-out that
/// runs in between cancels a task that has already decided to land: the grant of the ended
/// session is stored after `signOut()` returned (the store is signed in again as the old user),
/// and the refresh's waiters get its token rather than `signedOut`. A refresh still held at the
/// server when the sign-out comes is fenced correctly, which is all a paced round produces.
actor CancelFencedStore: SessionStore {
    private typealias Refresh = Task<Result<AccessToken, SessionError>, Never>

    private let endpoint: any TokenEndpoint
    private let clock: TokenClock
    private let skew: Duration
    private var grant: TokenGrant?
    private var revoked = false
    private var inFlight: Refresh?
    /// Bumped by sign-in and sign-out, so an overtaken sign-in is not applied.
    private var signInTicket: UInt64 = 0
    /// The app's keychain wrapper (in memory here): the last grant, for the next launch.
    private let keychain = KeychainMirror()

    init(configuration: SessionStoreConfiguration) {
        endpoint = configuration.endpoint
        clock = configuration.clock
        skew = configuration.refreshSkew
    }

    func validToken() async throws(SessionError) -> AccessToken {
        let current = try currentGrant().accessToken
        if inFlight == nil, current.isFresh(at: clock.now(), margin: skew) { return current }
        return try await refreshed().get()
    }

    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        let current = try currentGrant().accessToken
        if inFlight == nil, token != current, current.isFresh(at: clock.now(), margin: skew) { return current }
        return try await refreshed().get()
    }

    private func currentGrant() throws(SessionError) -> TokenGrant {
        if revoked { throw .refreshTokenRevoked }
        guard let grant else { throw .signedOut }
        return grant
    }

    private func refreshed() async -> Result<AccessToken, SessionError> {
        if let inFlight { return await inFlight.value }
        guard let refreshToken = grant?.refreshToken else { return .failure(.signedOut) }
        let endpoint = self.endpoint
        let keychain = self.keychain
        let task = Refresh.detached {
            let result = await endpoint.refreshResult(refreshToken)
            // signOut()/signIn() cancel us: the session is gone, drop the answer.
            if Task.isCancelled { return .failure(.signedOut) }
            // Persist before publish: the rotated refresh token goes to the app's keychain first.
            if case .success(let grant) = result { await keychain.save(grant) }
            return await self.land(result)
        }
        inFlight = task
        return await task.value
    }

    private func land(_ result: Result<TokenGrant, TokenEndpointError>) -> Result<AccessToken, SessionError> {
        inFlight = nil
        switch result {
        case .success(let new):
            grant = new
            return new.accessToken.isFresh(at: clock.now()) ? .success(new.accessToken) : .failure(.refreshFailed)
        case .failure(let error):
            let outcome = SessionError(refreshFailure: error)
            if outcome == .refreshTokenRevoked { revoked = true }
            return .failure(outcome)
        }
    }

    func signIn(_ credentials: Credentials) async throws(SessionError) {
        endSession()
        let ticket = signInTicket
        let result = await endpoint.signInResult(credentials)
        guard ticket == signInTicket else { throw .signedOut }
        switch result {
        case .success(let new):
            grant = new
            await keychain.save(new)
        case .failure: throw .signInFailed
        }
    }

    func signOut() async {
        endSession()
        await keychain.clear()
    }

    private func endSession() {
        signInTicket &+= 1
        inFlight?.cancel()
        inFlight = nil
        grant = nil
        revoked = false
    }
}

/// The app's keychain wrapper, an actor as such wrappers often are; kept in memory here.
private actor KeychainMirror {
    private var saved: TokenGrant?
    func save(_ grant: TokenGrant) { saved = grant }
    func clear() { saved = nil }
}
