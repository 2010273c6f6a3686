import SessionContract

/// The token lifecycle of one store, as a pure state machine.
///
/// ```
///            signIn            completed
/// signedOut ───────▶ signingIn ─────────▶ active(token) ◀──────────────┐
///     ▲                  │ failed            │ stale read / 401        │ refresh ok, or
///     │                  ▼                   ▼ for current token       │ transient failure
///     └────────────── signedOut        active(token, refreshing) ──────┘
///                                            │ invalid_grant
///                                            ▼
///                                         revoked ──signIn──▶ signingIn
/// ```
///
/// Every event is a `mutating func` that returns what the caller must do — resume these
/// waiters, start this refresh — as one action type per event, and does none of it itself,
/// so a store can call it under its lock and act after releasing it. The stores that guard it
/// with a lock, a queue or the main actor therefore share every decision and differ only in
/// synchronization.
///
/// Sign-in and sign-out advance an *epoch*; a refresh or sign-in that completes in an older
/// epoch is discarded. That is the sign-out fence: waiters of the discarded refresh were
/// already resumed with ``SessionError/signedOut`` when the epoch moved on.
public struct TokenLifecycle<Waiter> {
    public typealias Outcome = Result<AccessToken, SessionError>

    /// A refresh the store must start: call the endpoint with `refreshToken`, then report
    /// the result to ``refreshCompleted(_:result:now:)`` with this value.
    public struct RefreshRequest: Sendable {
        public let epoch: UInt64
        public let id: UInt64
        public let refreshToken: RefreshToken
    }

    /// What the store must do after ``acquire(_:id:now:isCancelled:)`` or
    /// ``rejected(_:waiter:id:now:isCancelled:)``.
    public enum AcquireAction {
        /// Resume the caller at once with this outcome.
        case resume(Waiter, Outcome)
        /// The caller now waits for a refresh already in flight; nothing to do.
        case parked
        /// The caller waits; start this refresh.
        case startRefresh(RefreshRequest)
    }

    /// What the store must do after ``refreshCompleted(_:result:now:)``.
    public enum RefreshCompletedAction {
        /// Resume these waiters, all with this outcome. The session moved on (new token, same
        /// token after a transient failure, or revoked).
        case resume([Waiter], Outcome)
        /// The refresh belongs to an ended session, or another answer superseded it: nothing to
        /// do. Its waiters were resumed when that happened.
        case discarded
    }

    /// What the store must do after ``adopt(_:now:)``.
    public enum AdoptAction {
        /// The grant was taken: resume these waiters (those of the refresh it answered, if one
        /// was in flight) with its access token.
        case resume([Waiter], AccessToken)
        /// The grant was not taken (another user's, not newer, not fresh, or no session): nothing
        /// changed.
        case refused
    }

    /// A sign-in that ``beginSignIn()`` started.
    public struct SignInStarted {
        /// The sign-in's epoch, to pass to ``signInCompleted(epoch:result:)``.
        public let epoch: UInt64
        /// The waiters of the session it ended, to resume with ``SessionError/signedOut``.
        public let orphans: [Waiter]
    }

    /// The state as observers see it, with the version it has (``observed``).
    public struct ObservedState: Hashable, Sendable {
        public let state: SessionState
        public let version: UInt64
    }

    fileprivate struct Refresh {
        var id: UInt64
        var waiters: [UInt64: Waiter]
    }

    fileprivate enum State {
        case signedOut
        case signingIn
        case active(grant: TokenGrant, refresh: Refresh?)
        case revoked
        /// Only while `modifyRefresh` mutates the refresh in place; never seen by an event
        /// or a read, since both need the exclusive access that the mutation holds.
        case modifying
    }

    private var state: State = .signedOut
    private var epoch: UInt64 = 0
    private var refreshIDs: UInt64 = 0
    /// Moves whenever the token a fast-path reader may return changes (or stops being
    /// returnable), so readers can validate a cached copy by comparing versions.
    public private(set) var version: UInt64 = 0
    /// A token within this margin of expiry is treated as expired.
    public let skew: Duration
    /// `skew` in nanoseconds, converted once: the fast path compares integers.
    public let skewNanoseconds: Int64

    public init(skew: Duration) {
        self.skew = skew
        skewNanoseconds = skew.nanosecondsClamped
    }

    // MARK: Reads

    /// The current token if a caller may have it without waiting: fresh, and no refresh in
    /// flight (a refresh means the token was rejected or is about to expire).
    public func freshToken(at now: TokenInstant) -> AccessToken? {
        guard case .active(let grant, nil) = state,
            now.nanoseconds &+ skewNanoseconds < grant.accessToken.expiresAt.nanoseconds
        else { return nil }
        return grant.accessToken
    }

    /// The answer to a 401 for `rejected` when it needs no waiting: a newer token exists, is
    /// fresh, and no refresh is in flight. `nil` when the caller must go through
    /// ``rejected(_:waiter:id:now:isCancelled:)``.
    public func currentTokenIfStale(_ rejected: AccessToken, at now: TokenInstant) -> AccessToken? {
        guard let current = freshToken(at: now), rejected.isStale(comparedWith: current) else { return nil }
        return current
    }

    /// Whether `request` is still the refresh this session waits for: its epoch is current and no
    /// sign-out, sign-in or other completion has superseded it. A store that persists grants
    /// asks this before saving one, so a refresh discarded by a sign-out is never written.
    public func isCurrent(_ request: RefreshRequest) -> Bool {
        guard request.epoch == epoch, case .active(_, let refresh?) = state else { return false }
        return refresh.id == request.id
    }

    /// Whether a sign-in of `signInEpoch` is still the one under way.
    public func isCurrentSignIn(epoch signInEpoch: UInt64) -> Bool {
        guard signInEpoch == epoch, case .signingIn = state else { return false }
        return true
    }

    /// Whether `grant` is the session's current grant (refreshing or not).
    public func holds(_ grant: TokenGrant) -> Bool {
        guard case .active(let current, _) = state else { return false }
        return current.refreshToken == grant.refreshToken
    }

    /// The state as observers see it, with the version it has: published after each event so
    /// that ``SessionState`` subscribers see changes in order (``StateBroadcaster``).
    public var observed: ObservedState {
        let observed: SessionState =
            switch state {
            case .signedOut, .signingIn: .signedOut
            case .revoked: .revoked
            case .active(let grant, nil): .signedIn(generation: grant.accessToken.generation)
            case .active(let grant, _): .refreshing(generation: grant.accessToken.generation)
            case .modifying: preconditionFailure("Internal inconsistency: TokenLifecycle is modifying")
            }
        return ObservedState(state: observed, version: version)
    }

    /// Number of callers waiting on the current refresh.
    public var waiterCount: Int {
        if case .active(_, let refresh?) = state { return refresh.waiters.count }
        return 0
    }

    // MARK: Events

    /// A caller wants a valid token.
    public mutating func acquire(_ waiter: Waiter, id: UInt64, now: TokenInstant, isCancelled: Bool)
        -> AcquireAction
    {
        switch state {
        case .signedOut, .signingIn:
            return .resume(waiter, .failure(.signedOut))
        case .revoked:
            return .resume(waiter, .failure(.refreshTokenRevoked))
        case .active(_, .some):
            if isCancelled { return .resume(waiter, .failure(.cancelled)) }
            modifyRefresh { $0.waiters[id] = waiter }
            return .parked
        case .active(let grant, nil):
            if grant.accessToken.isFresh(at: now, margin: skew) {
                return .resume(waiter, .success(grant.accessToken))
            }
            if isCancelled { return .resume(waiter, .failure(.cancelled)) }
            return startRefresh(grant: grant, firstWaiter: waiter, id: id)
        case .modifying:
            preconditionFailure("Internal inconsistency: TokenLifecycle is modifying")
        }
    }

    /// A request made with `token` got a 401.
    public mutating func rejected(
        _ token: AccessToken, waiter: Waiter, id: UInt64, now: TokenInstant, isCancelled: Bool
    ) -> AcquireAction {
        guard case .active(let grant, nil) = state else {
            // Signed out, revoked, or a refresh is already replacing the token: same as a read.
            return acquire(waiter, id: id, now: now, isCancelled: isCancelled)
        }
        if token.isStale(comparedWith: grant.accessToken) {
            // A newer token exists: hand it out (refreshing only if it has itself expired).
            return acquire(waiter, id: id, now: now, isCancelled: isCancelled)
        }
        if isCancelled { return .resume(waiter, .failure(.cancelled)) }
        return startRefresh(grant: grant, firstWaiter: waiter, id: id)
    }

    /// A refresh started by this machine finished. Returns the waiters to resume and the
    /// outcome they all share. A refresh that belongs to an ended session, or that another
    /// answer superseded, is ``RefreshCompletedAction/discarded``: its waiters were resumed when
    /// that happened, and the state does not move.
    public mutating func refreshCompleted(
        _ request: RefreshRequest, result: Result<TokenGrant, TokenEndpointError>, now: TokenInstant
    ) -> RefreshCompletedAction {
        guard request.epoch == epoch, case .active(let grant, let refresh?) = state, refresh.id == request.id
        else {
            // Signed out, switched user or adopted another grant while the call was in flight.
            return .discarded
        }
        let waiters = Array(refresh.waiters.values)
        version &+= 1
        switch result {
        case .success(let newGrant) where newGrant.accessToken.isFresh(at: now):
            state = .active(grant: newGrant, refresh: nil)
            return .resume(waiters, .success(newGrant.accessToken))
        case .success(let newGrant):
            // Issued already expired (a lifetime shorter than the trip): fail this round, but
            // keep the *rotated* grant. The old refresh token is used now; presenting it again
            // would be reuse, and the server would revoke the session.
            state = .active(grant: newGrant, refresh: nil)
            return .resume(waiters, .failure(.refreshFailed))
        case .failure(let endpointError):
            let error = SessionError(refreshFailure: endpointError)
            state = error == .refreshTokenRevoked ? .revoked : .active(grant: grant, refresh: nil)
            return .resume(waiters, .failure(error))
        }
    }

    /// The waiter `id` was cancelled. Returns it if it was still waiting, for the store to
    /// resume with ``SessionError/cancelled``; the refresh itself goes on for the others.
    public mutating func cancelWaiter(id: UInt64) -> Waiter? {
        modifyRefresh { $0.waiters.removeValue(forKey: id) } ?? nil
    }

    /// A sign-in starts. Returns its epoch (to pass to ``signInCompleted(epoch:result:)``)
    /// and the waiters of the ended session, to resume with ``SessionError/signedOut``.
    public mutating func beginSignIn() -> SignInStarted {
        let orphans = endSession(next: .signingIn)
        return SignInStarted(epoch: epoch, orphans: orphans)
    }

    /// The sign-in of `epoch` finished. A sign-in overtaken by a later sign-in or sign-out
    /// is discarded and reported as ``SessionError/signedOut``.
    public mutating func signInCompleted(epoch signInEpoch: UInt64, result: Result<TokenGrant, TokenEndpointError>)
        -> Result<Void, SessionError>
    {
        guard signInEpoch == epoch, case .signingIn = state else { return .failure(.signedOut) }
        version &+= 1
        switch result {
        case .success(let grant):
            state = .active(grant: grant, refresh: nil)
            return .success(())
        case .failure:
            state = .signedOut
            return .failure(.signInFailed)
        }
    }

    /// A session saved by an earlier launch: the store starts signed in with `grant`, as if its
    /// sign-in had just completed. Only in a store still signed out (a new one); otherwise ignored.
    public mutating func restore(_ grant: TokenGrant) {
        guard case .signedOut = state else { return }
        epoch &+= 1
        version &+= 1
        state = .active(grant: grant, refresh: nil)
    }

    /// Another holder of a shared storage saved `grant` (its storage announced it). Taken if it is
    /// the same user's, newer than the session's token and fresh at `now`: a refresh in flight is
    /// answered with it, as if this holder's own turn had found it there (returns that refresh's
    /// waiters and the token; the refresh itself, no longer current, must not reach the server).
    public mutating func adopt(_ grant: TokenGrant, now: TokenInstant) -> AdoptAction {
        guard case .active(let current, let refresh) = state,
            grant.accessToken.subject == current.accessToken.subject,
            grant.accessToken.generation > current.accessToken.generation,
            grant.accessToken.isFresh(at: now, margin: skew)
        else { return .refused }
        version &+= 1
        state = .active(grant: grant, refresh: nil)
        return .resume(refresh.map { Array($0.waiters.values) } ?? [], grant.accessToken)
    }

    /// Another holder of a shared storage signed out while `request` waited for its turn (the
    /// storage was empty when read again): the session ends here too. Returns the refresh's
    /// waiters, to resume with ``SessionError/signedOut``; none if `request` is no longer current.
    public mutating func endedElsewhere(_ request: RefreshRequest) -> [Waiter] {
        guard isCurrent(request) else { return [] }
        return endSession(next: .signedOut)
    }

    /// Sign-out. Returns the waiters to resume with ``SessionError/signedOut``.
    public mutating func signOut() -> [Waiter] {
        endSession(next: .signedOut)
    }

    // MARK: Helpers

    /// Mutates the in-flight refresh in place. The state is `.modifying` while `body`
    /// runs, so the refresh (and its waiter dictionary) is held once: binding it out of the enum
    /// while the enum still holds it too, then writing it back, would copy the dictionary on every
    /// waiter, quadratic in a storm. `nil` when no refresh is in flight.
    private mutating func modifyRefresh<R>(_ body: (inout Refresh) -> R) -> R? {
        guard case .active(let grant, var refresh?) = state else { return nil }
        state = .modifying
        defer { state = .active(grant: grant, refresh: refresh) }
        return body(&refresh)
    }

    private mutating func startRefresh(grant: TokenGrant, firstWaiter: Waiter, id: UInt64) -> AcquireAction {
        refreshIDs &+= 1
        version &+= 1
        state = .active(grant: grant, refresh: Refresh(id: refreshIDs, waiters: [id: firstWaiter]))
        return .startRefresh(RefreshRequest(epoch: epoch, id: refreshIDs, refreshToken: grant.refreshToken))
    }

    private mutating func endSession(next: State) -> [Waiter] {
        var orphans: [Waiter] = []
        if case .active(_, let refresh?) = state { orphans = Array(refresh.waiters.values) }
        epoch &+= 1
        version &+= 1
        state = next
        return orphans
    }
}

extension TokenLifecycle: Sendable where Waiter: Sendable {}
extension TokenLifecycle.AcquireAction: Sendable where Waiter: Sendable {}
extension TokenLifecycle.RefreshCompletedAction: Sendable where Waiter: Sendable {}
extension TokenLifecycle.AdoptAction: Sendable where Waiter: Sendable {}
extension TokenLifecycle.SignInStarted: Sendable where Waiter: Sendable {}
extension TokenLifecycle.Refresh: Sendable where Waiter: Sendable {}
extension TokenLifecycle.State: Sendable where Waiter: Sendable {}
