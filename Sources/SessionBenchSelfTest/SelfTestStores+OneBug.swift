import SessionContract
import Synchronization

extension SelfTestStores {
    /// One correct single-flight store (a refresh in a task of its own, every caller awaiting it,
    /// an epoch that every sign-in and sign-out bumps), each of these with one bug of a kind auth
    /// libraries have shipped.
    static let oneBug: [StoreDescriptor] = OneBug.allCases.map { bug in
        StoreDescriptor(
            name: bug.rawValue, summary: bug.summary + " (self-test)", isReferenceBroken: true,
            offersSynchronousRead: true, persistsSession: bug.persists
        ) { OneBugStore(configuration: $0, bug: bug) }
    }
}

enum OneBug: String, CaseIterable, Sendable {
    /// A failed (transient) refresh puts back the grant it refreshed, without the session check
    /// the success path has: a sign-out during a failing refresh brings the ended session back.
    case rollbackOnFailure = "rollback-on-failure"
    /// 401s are deduplicated by token: a refresh of generation g that failed transiently is
    /// replayed to every later 401 for g, without a server call, until a read refreshes.
    case sticky401Failure = "sticky-401-failure"
    /// `signIn` replaces the session only when the new grant arrives: until then the previous
    /// user's token is handed out (and refreshed) while the other user's sign-in is under way.
    case keepsUserUntilGranted = "keeps-user-until-granted"
    /// A waiter gives the shared refresh 5 s, then sends its own with the refresh token it saw,
    /// though the shared refresh is still in flight with that same token (I1, and a reuse that
    /// revokes the session). The paced scenarios' server answers in milliseconds: only an answer
    /// the schedule makes land late shows it.
    case impatientWaiter = "impatient-waiter"
    /// The same with 90 s, past the longest an answer may be late: an answer already landed can
    /// still wait behind the watchdog's timer, so any length is in reach.
    case slowWatchdog = "slow-watchdog"
    /// The store keeps its session (the only one of these that does). Its refresh checks under
    /// the lock that the session is still the one it refreshes, lets go of the lock, and saves the
    /// new grant — a Keychain write is slow, and moving it out of the lock is the usual answer to a
    /// lock held too long. A sign-out between the check and the save clears the storage and
    /// returns; the save lands after it, and the next launch restores the ended session (I16).
    case savesAfterUnlock = "saves-after-unlock"
    /// Keeps its session, and refreshes right; its sign-in checks under the lock that it is still
    /// the latest sign-in with no sign-out since, lets go of the lock and saves the new grant, then
    /// publishes it if still current. A sign-out (or another sign-in) between the check and the
    /// save clears the storage and returns; the overtaken sign-in's save lands after it (I16).
    case signInSavesAfterUnlock = "sign-in-saves-after-unlock"

    /// Whether the store keeps its session in the storage it is given.
    var persists: Bool { self == .savesAfterUnlock || self == .signInSavesAfterUnlock }

    /// How long a waiter gives the shared refresh before it sends its own; `nil`: for ever.
    var patience: Duration? {
        switch self {
        case .impatientWaiter: .seconds(5)
        case .slowWatchdog: .seconds(90)
        default: nil
        }
    }

    var summary: String {
        switch self {
        case .rollbackOnFailure: "a failed refresh restores its grant without checking the session"
        case .sticky401Failure: "a 401 for a token whose refresh failed replays the failure"
        case .keepsUserUntilGranted: "the previous session is served until the new sign-in is granted"
        case .impatientWaiter: "single-flight, but a caller that waited 5 s for the shared refresh sends one of its own"
        case .slowWatchdog: "a waiter gives the shared refresh 90 s, then sends its own"
        case .savesAfterUnlock: "keeps its session, but a refresh saves its grant after letting go of the lock"
        case .signInSavesAfterUnlock: "keeps its session, but a sign-in saves its grant after letting go of the lock"
        }
    }
}

final class OneBugStore: SessionStore, SynchronousTokenReading {
    private typealias Refresh = Task<Result<TokenGrant, SessionError>, Never>

    private struct State {
        var grant: TokenGrant?
        /// Bumped by every sign-in and sign-out: a refresh of an earlier session publishes nothing.
        var epoch = 0
        var refreshing: Refresh?
        /// The generation whose refresh last failed (transiently), for `sticky-401-failure`.
        var failedGeneration: UInt64?
        /// Bumped by every sign-in: an overtaken sign-in publishes nothing.
        var signInTicket = 0
    }

    private enum Step {
        case token(AccessToken)
        case wait(Refresh, grant: TokenGrant, epoch: Int)
        case failed(SessionError)
    }

    private let configuration: SessionStoreConfiguration
    private let bug: OneBug
    private let state: Mutex<State>

    init(configuration: SessionStoreConfiguration, bug: OneBug) {
        self.configuration = configuration
        self.bug = bug
        // Over a storage (`saves-after-unlock`), what the previous process saved.
        state = Mutex(State(grant: (try? configuration.storage?.load()) ?? nil))
    }

    func currentToken() -> AccessToken? {
        let now = configuration.clock.now()
        return state.withLock { state in
            guard let grant = state.grant, state.refreshing == nil,
                grant.accessToken.isFresh(at: now, margin: configuration.refreshSkew)
            else { return nil }
            return grant.accessToken
        }
    }

    func validToken() async throws(SessionError) -> AccessToken {
        let now = configuration.clock.now()
        let step = state.withLock { state -> Step in
            guard let grant = state.grant else { return .failed(.signedOut) }
            if state.refreshing == nil, grant.accessToken.isFresh(at: now, margin: configuration.refreshSkew) {
                return .token(grant.accessToken)
            }
            return .wait(start(&state, grant), grant: grant, epoch: state.epoch)
        }
        return try await finish(step)
    }

    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        let now = configuration.clock.now()
        let step = state.withLock { state -> Step in
            guard let grant = state.grant else { return .failed(.signedOut) }
            let current = grant.accessToken
            let stale = token != current
            if stale {
                // A newer token exists: the same as a read.
                if state.refreshing == nil, current.isFresh(at: now, margin: configuration.refreshSkew) {
                    return .token(current)
                }
                return .wait(start(&state, grant), grant: grant, epoch: state.epoch)
            }
            if bug == .sticky401Failure, state.refreshing == nil, state.failedGeneration == current.generation {
                // The bug: "we already tried to refresh this token, and it failed".
                return .failed(.refreshFailed)
            }
            return .wait(start(&state, grant), grant: grant, epoch: state.epoch)
        }
        return try await finish(step)
    }

    /// The refresh running, or a new one of `grant`.
    private func start(_ state: inout State, _ grant: TokenGrant) -> Refresh {
        if let running = state.refreshing { return running }
        let epoch = state.epoch
        let refresh = Refresh { await self.refresh(grant, epoch: epoch) }
        state.refreshing = refresh
        return refresh
    }

    private func finish(_ step: Step) async throws(SessionError) -> AccessToken {
        switch step {
        case .token(let token): return token
        case .failed(let error): throw error
        case .wait(let refresh, let grant, let epoch):
            let result: Result<TokenGrant, SessionError>
            if let patience = bug.patience {
                // The bug: the shared refresh gets so long, then this caller sends its own.
                let waited = await withTaskGroup(of: Result<TokenGrant, SessionError>?.self) { group in
                    group.addTask { await refresh.value }
                    group.addTask {
                        try? await Task.sleep(for: patience)
                        return nil
                    }
                    let first = await group.next() ?? nil
                    group.cancelAll()
                    return first
                }
                if let waited {
                    result = waited
                } else if Task.isCancelled {
                    result = await refresh.value
                } else {
                    result = await self.refresh(grant, epoch: epoch)
                }
            } else {
                result = await refresh.value
            }
            // A refresh of a session that ended meanwhile answers nobody.
            guard state.withLock({ $0.epoch }) == epoch else { throw .signedOut }
            return try result.get().accessToken
        }
    }

    private func refresh(_ grant: TokenGrant, epoch: Int) async -> Result<TokenGrant, SessionError> {
        let result = await configuration.endpoint.refreshResult(grant.refreshToken).mapError(
            SessionError.init(refreshFailure:))
        if bug == .savesAfterUnlock, case .success(let next) = result, state.withLock({ $0.epoch == epoch }) {
            // The bug: the check and the save are two steps.
            try? configuration.storage?.save(next)
        }
        state.withLock { state in
            if bug == .rollbackOnFailure, case .failure(let error) = result, error != .refreshTokenRevoked {
                // The bug: "keep the grant so that the next call retries", written without the
                // session check that the success path below has.
                state.refreshing = nil
                state.grant = grant
                return
            }
            guard state.epoch == epoch else { return }
            state.refreshing = nil
            switch result {
            case .success(let next):
                // Saved before it is published, under the lock (`saves-after-unlock` saved it above).
                if bug == .signInSavesAfterUnlock { try? configuration.storage?.save(next) }
                state.grant = next
                state.failedGeneration = nil
            case .failure(.refreshTokenRevoked):
                state.grant = nil
                try? configuration.storage?.clear()
            case .failure: state.failedGeneration = grant.accessToken.generation
            }
        }
        return result
    }

    func signIn(_ credentials: Credentials) async throws(SessionError) {
        let (epoch, ticket) = state.withLock { state -> (Int, Int) in
            state.signInTicket += 1
            if bug != .keepsUserUntilGranted {
                state = State(grant: nil, epoch: state.epoch + 1, signInTicket: state.signInTicket)
                try? configuration.storage?.clear()
            }
            return (state.epoch, state.signInTicket)
        }
        let answer = await configuration.endpoint.signInResult(credentials)
        // A sign-in overtaken by a sign-out or another sign-in publishes nothing.
        let current = state.withLock { state -> Bool in
            guard state.epoch == epoch, state.signInTicket == ticket else { return false }
            if bug == .keepsUserUntilGranted {
                // The bug: the previous session ends only now.
                state = State(grant: nil, epoch: state.epoch + 1, signInTicket: state.signInTicket)
                try? configuration.storage?.clear()
            }
            if case .success(let first) = answer, bug != .signInSavesAfterUnlock {
                try? configuration.storage?.save(first)
                state.grant = first
            }
            return true
        }
        guard current else { throw .signedOut }
        guard case .success(let first) = answer else { throw .signInFailed }
        if bug == .signInSavesAfterUnlock {
            // The bug: the check and the save are two steps (the publish checks again).
            try? configuration.storage?.save(first)
            let published = state.withLock { state -> Bool in
                guard state.epoch == epoch, state.signInTicket == ticket else { return false }
                state.grant = first
                return true
            }
            guard published else { throw .signedOut }
        }
    }

    func signOut() async {
        state.withLock { state in
            state = State(grant: nil, epoch: state.epoch + 1, signInTicket: state.signInTicket)
            try? configuration.storage?.clear()
        }
    }
}
