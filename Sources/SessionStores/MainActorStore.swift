import SessionContract

/// A store isolated to the main actor (the FitIQ `AuthManager` pattern), driving the shared
/// ``TokenLifecycle`` from main-actor code.
///
/// - Guarantee: the full contract; the lifecycle is only touched on the main actor, and the
///   compiler checks it.
/// - Cost model: every call from a background task hops to the main actor and back — two
///   executor switches — and all callers serialize on the one main thread. The hop's job
///   allocates when the main queue has to be woken (0.37 allocations per read with 4 callers
///   in `steady-reads`); a parked caller's frames spill into a new slab (~1 KB).
/// - Known weakness: contends with whatever else the main thread does (UI, in an app);
///   cancelling a waiter takes a hop too, so it is resumed a little later than under a lock.
@MainActor
public final class MainActorStore: SessionStore {
    private var lifecycle: TokenLifecycle<TokenWaiter>
    private let endpoint: any TokenEndpoint
    private let clock: TokenClock
    private var waiterIDs: UInt64 = 0

    public nonisolated init(configuration: SessionStoreConfiguration) {
        lifecycle = TokenLifecycle(skew: configuration.refreshSkew)
        endpoint = configuration.endpoint
        clock = configuration.clock
    }

    public func validToken() async throws(SessionError) -> AccessToken {
        if let token = lifecycle.freshToken(at: clock.now()) { return token }
        return try await park { lifecycle, waiter, id, now, isCancelled in
            lifecycle.acquire(waiter, id: id, now: now, isCancelled: isCancelled)
        }
    }

    public func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        if let current = lifecycle.currentTokenIfStale(token, at: clock.now()) { return current }
        return try await park { lifecycle, waiter, id, now, isCancelled in
            lifecycle.rejected(token, waiter: waiter, id: id, now: now, isCancelled: isCancelled)
        }
    }

    public func signIn(_ credentials: Credentials) async throws(SessionError) {
        let started = lifecycle.beginSignIn()
        for orphan in started.orphans { orphan.resume(returning: .failure(.signedOut)) }
        let result = await endpoint.signInResult(credentials)
        try lifecycle.signInCompleted(epoch: started.epoch, result: result).get()
    }

    public func signOut() async {
        for orphan in lifecycle.signOut() { orphan.resume(returning: .failure(.signedOut)) }
    }

    private func park(
        _ event: (inout TokenLifecycle<TokenWaiter>, TokenWaiter, UInt64, TokenInstant, Bool) ->
            TokenLifecycle<TokenWaiter>.AcquireAction
    ) async throws(SessionError) -> AccessToken {
        waiterIDs &+= 1
        let id = waiterIDs
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: TokenWaiter) in
                switch event(&lifecycle, waiter, id, clock.now(), Task.isCancelled) {
                case .resume(let waiter, let outcome): waiter.resume(returning: outcome)
                case .parked: break
                case .startRefresh(let request): Task { await self.refresh(request) }
                }
            }
        } onCancel: {
            Task { @MainActor in
                self.lifecycle.cancelWaiter(id: id)?.resume(returning: .failure(.cancelled))
            }
        }
        return try outcome.get()
    }

    private func refresh(_ request: TokenLifecycle<TokenWaiter>.RefreshRequest) async {
        let result = await endpoint.refreshResult(request.refreshToken)
        switch lifecycle.refreshCompleted(request, result: result, now: clock.now()) {
        case .resume(let waiters, let outcome): for waiter in waiters { waiter.resume(returning: outcome) }
        case .discarded: break
        }
    }
}
