import SessionContract
import SessionSync
import Synchronization

/// Step-up authentication for the lock and queue stores: one prompt at a time, shared by every
/// caller of every API object, and an elevated token that ends with its session.
///
/// - Guarantee: prompt single-flight — the check for a fresh elevated token, for a prompt in
///   flight, and the start of one happen under one lock. The prompt and the server call run in
///   an unstructured task that holds no lock: base-token reads and refreshes go on while the user
///   thinks. Every waiter of one prompt gets its one outcome; a denial is not kept, so the next
///   call prompts again. ``end()`` (sign-out, the start of a sign-in) moves an epoch: the elevated
///   token is dropped, the prompt's waiters get ``SessionError/signedOut``, and an answer that
///   comes later buys nothing (no server call is made for an ended session).
/// - Cost model: a cached elevated token is one lock and a clock read; a step-up parks a
///   continuation per waiter and starts one task.
public final class ElevationCoordinator: Sendable {
    public typealias Waiter = CheckedContinuation<Result<ElevatedToken, SessionError>, Never>
    /// How the base token is fetched for the server call: the store's own `validToken()`.
    public typealias BaseToken = @Sendable () async throws(SessionError) -> AccessToken

    private struct Flight {
        var id: UInt64
        var waiters: [UInt64: Waiter] = [:]
    }

    private struct State {
        var epoch: UInt64 = 0
        var elevated: ElevatedToken?
        var flight: Flight?
        var ids: UInt64 = 0
    }

    private let state = Mutex(State())
    private let clock: TokenClock
    private let skew: Duration
    private let authenticator: (any StepUpAuthenticator)?
    private let endpoint: (any StepUpEndpoint)?

    public init(configuration: SessionStoreConfiguration) {
        clock = configuration.clock
        skew = configuration.refreshSkew
        authenticator = configuration.authenticator
        endpoint = configuration.endpoint as? any StepUpEndpoint
    }

    /// The elevated token, prompting (once for every concurrent caller) when there is no fresh one.
    public func elevatedToken(base: @escaping BaseToken) async throws(SessionError) -> ElevatedToken {
        let id = state.withLock(visibleTo: self) { state in
            state.ids &+= 1
            return state.ids
        }
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: Waiter) in
                let start: (flight: UInt64, epoch: UInt64)? = state.withLock(visibleTo: self) { state in
                    if let elevated = state.elevated, elevated.isFresh(at: clock.now(), margin: skew) {
                        waiter.resume(returning: .success(elevated))
                        return nil
                    }
                    if Task.isCancelled {
                        waiter.resume(returning: .failure(.cancelled))
                        return nil
                    }
                    if state.flight != nil {
                        state.flight?.waiters[id] = waiter
                        return nil
                    }
                    state.ids &+= 1
                    state.flight = Flight(id: state.ids, waiters: [id: waiter])
                    return (state.ids, state.epoch)
                }
                if let start {
                    // Unstructured: the prompt belongs to no caller, so no caller's cancellation ends it.
                    Task { await self.stepUp(flight: start.flight, epoch: start.epoch, base: base) }
                }
            }
        } onCancel: {
            let waiter = state.withLock(visibleTo: self) { $0.flight?.waiters.removeValue(forKey: id) }
            waiter?.resume(returning: .failure(.cancelled))
        }
        return try outcome.get()
    }

    /// The session ended (sign-out, or another sign-in began): drop the elevated token and fail the
    /// prompt's waiters with ``SessionError/signedOut``.
    public func end() {
        let waiters = state.withLock(visibleTo: self) { state in
            state.epoch &+= 1
            state.elevated = nil
            defer { state.flight = nil }
            return state.flight.map { Array($0.waiters.values) } ?? []
        }
        for waiter in waiters { waiter.resume(returning: .failure(.signedOut)) }
    }

    private func isCurrent(_ epoch: UInt64) -> Bool { state.withLock(visibleTo: self) { $0.epoch == epoch } }

    private func stepUp(flight: UInt64, epoch: UInt64, base: BaseToken) async {
        let outcome = await elevate(epoch: epoch, base: base)
        let waiters = state.withLock(visibleTo: self) { state -> [Waiter] in
            guard state.epoch == epoch, let current = state.flight, current.id == flight else { return [] }
            if case .success(let elevated) = outcome { state.elevated = elevated }
            state.flight = nil
            return Array(current.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: outcome) }
    }

    private func elevate(epoch: UInt64, base: BaseToken) async -> Result<ElevatedToken, SessionError> {
        await Self.stepUp(
            base: base, authenticator: authenticator, endpoint: endpoint, clock: clock,
            isCurrent: { self.isCurrent(epoch) })
    }

    /// One step-up, with no coordination: fetches the base token through `base`, prompts its user,
    /// and, if they approve while `isCurrent()` still holds, buys an elevated token (a fresh one,
    /// or ``SessionError/stepUpFailed``). A session that ended while the user answered gets
    /// ``SessionError/signedOut`` and no server call. Stores call it from their single flight.
    public static func stepUp(
        base: BaseToken, authenticator: (any StepUpAuthenticator)?, endpoint: (any StepUpEndpoint)?,
        clock: TokenClock, isCurrent: @Sendable () async -> Bool
    ) async -> Result<ElevatedToken, SessionError> {
        guard let authenticator, let endpoint else { return .failure(.stepUpFailed) }
        let token: AccessToken
        do throws(SessionError) { token = try await base() } catch { return .failure(error) }
        // A session that ended while the base token came (a sign-out, another user's sign-in) has
        // nobody to prompt: the next user's own request prompts them, once.
        guard await isCurrent() else { return .failure(.signedOut) }
        switch await authenticator.prompt(for: token.subject) {
        case .denied: return .failure(.stepUpDenied)
        case .dismissed: return .failure(.stepUpDismissed)
        case .approved(let proof):
            guard await isCurrent() else { return .failure(.signedOut) }
            do throws(TokenEndpointError) {
                let elevated = try await endpoint.elevate(token, proof: proof)
                return elevated.isFresh(at: clock.now()) ? .success(elevated) : .failure(.stepUpFailed)
            } catch {
                return .failure(.stepUpFailed)
            }
        }
    }
}

/// An API object of a store: it holds the store (the app's long-lived proxy, `Current`), never a
/// session, so each call serves whoever is signed in when it is made.
final class ProxyClient: SessionClient {
    private let store: any SessionStore
    private let elevation: ElevationCoordinator

    init(store: any SessionStore, elevation: ElevationCoordinator) {
        self.store = store
        self.elevation = elevation
    }

    func token() async throws(SessionError) -> AccessToken { try await store.validToken() }

    func elevatedToken() async throws(SessionError) -> ElevatedToken {
        let store = self.store
        return try await elevation.elevatedToken { () async throws(SessionError) -> AccessToken in
            try await store.validToken()
        }
    }
}
