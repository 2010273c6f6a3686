import SessionContract
import SessionSync

/// The refresh: with the endpoint alone, or — over a storage other holders share — in the storage's
/// turn, reading it again first, or answered by a grant another holder saved and the storage
/// announced. The store's state stays the lifecycle's; everything here acts on its decisions.
extension LockedSessionStore {
    func refresh(_ request: TokenLifecycle<TokenWaiter>.RefreshRequest) async {
        guard let persistence, persistence.isShared else {
            return await refresh(request, presenting: request.refreshToken)
        }
        do throws(StorageError) {
            try await takeTurn(request, persistence: persistence)
        } catch {
            // No turn (a lock wait that timed out, a database out of reach): refreshing without one
            // could present a refresh token another holder is presenting. This round fails as a
            // transient error; the next caller tries again.
            perform(changing { $0.refreshCompleted(request, result: .failure(.transient), now: clock.now()) })
        }
    }

    /// The refresh in this holder's turn: another holder's newer grant if the storage has one,
    /// else a call to the server.
    func takeTurn(
        _ request: TokenLifecycle<TokenWaiter>.RefreshRequest, persistence: SessionPersistence
    ) async throws(StorageError) {
        try await persistence.takingTurns {
            // Answered meanwhile (a grant another holder saved, announced while this one waited)
            // or ended: no one waits for this refresh, and its refresh token may be spent.
            guard lifecycle.withSharedAccess({ $0.isCurrent(request) }) else { return }
            switch persistence.reload() {
            case .session(let stored) where stored.refreshToken != request.refreshToken:
                guard stored.accessToken.isFresh(at: clock.now(), margin: skew) else {
                    // Another holder refreshed earlier, and that token has expired too: its
                    // refresh token is the one the server still accepts.
                    return await refresh(request, presenting: stored.refreshToken)
                }
                // Another holder refreshed while this one waited its turn: its grant is the answer.
                perform(changing { $0.refreshCompleted(request, result: .success(stored), now: clock.now()) })
            case .empty:
                // Another holder signed out: the shared session is over here too.
                resume(changing { $0.endedElsewhere(request) }, with: .failure(.signedOut))
            case .session, .unreadable:
                await refresh(request, presenting: request.refreshToken)
            }
        }
    }

    /// Calls the server with `refreshToken` for `request`, then saves and publishes its answer.
    func refresh(
        _ request: TokenLifecycle<TokenWaiter>.RefreshRequest, presenting refreshToken: RefreshToken
    ) async {
        let result = await endpoint.refreshResult(refreshToken)
        let isCurrent = { [lifecycle] in lifecycle.withSharedAccess { $0.isCurrent(request) } }
        persisting(try? result.get(), isCurrent: isCurrent) {
            perform(changing { $0.refreshCompleted(request, result: result, now: clock.now()) })
        }
    }

    /// A grant another holder saved, as the shared storage announced it: taken if newer and fresh,
    /// answering the callers of a refresh this holder was waiting its turn for.
    func adopt(_ grant: TokenGrant) {
        switch changing({ $0.adopt(grant, now: clock.now()) }) {
        case .resume(let waiters, let token): resume(waiters, with: .success(token))
        case .refused: break
        }
    }

    /// Resumes the waiters of a completed refresh; a discarded one has none left to resume.
    func perform(_ action: TokenLifecycle<TokenWaiter>.RefreshCompletedAction) {
        switch action {
        case .resume(let waiters, let outcome): resume(waiters, with: outcome)
        case .discarded: break
        }
    }
}
