import SessionContract
import SessionStores
import SessionSync
import Synchronization

/// Stores wrong in one way each about step-up and API objects, each a correct `MutexStore` with
/// one promise broken on top of it: every concurrent request prompting (I18), a denial kept (I19),
/// a cancellation told the prompt was dismissed (I11), an elevated token kept across a user
/// switch (I20), one async queue for every auth operation (I21), an API object that keeps the
/// first token it got (I22); and, over a single flight of their own (``FlightStore``), an outcome
/// handed to the first waiter only (I19), a waiter that gives up on the prompt after a second
/// (I18), elevated tokens cached by user id (I20), a step-up a sign-out does not end (I22).
/// `step-up` names each, and so does `explore --scenario step-up`.
extension SelfTestStores {
    static let stepUp: [StoreDescriptor] = [
        StepUpWrapper.descriptor(
            CheckThenPromptStore.self, "step-up-check-then-prompt",
            "checks for an elevated token, then prompts: every concurrent request prompts"),
        StepUpWrapper.descriptor(
            StickyDenialStore.self, "step-up-sticky-denial",
            "remembers a denial and refuses every later step-up without asking"),
        StepUpWrapper.descriptor(
            CancelledAsDismissedStore.self, "step-up-cancelled-as-dismissed",
            "tells a cancelled request the user dismissed the prompt"),
        StepUpWrapper.descriptor(
            ElevationSurvivesSwitchStore.self, "step-up-survives-switch",
            "drops the elevated token on sign-out but keeps it across another user's sign-in"),
        StepUpWrapper.descriptor(
            OneAuthQueueStore.self, "step-up-one-auth-queue",
            "one async queue for every auth operation: a read waits while the user answers"),
        StepUpWrapper.descriptor(
            TokenCapturingClientStore.self, "step-up-token-capturing-client",
            "an API object keeps the first token it got while it is fresh"),
        StepUpWrapper.descriptor(
            FirstWaiterOnlyStore.self, "step-up-first-waiter-only",
            "hands a prompt's outcome to the request that started it; the others re-check, and after a refusal prompt again"
        ),
        StepUpWrapper.descriptor(
            WaiterTimeoutStore.self, "step-up-waiter-timeout",
            "a request that joins the open prompt waits 1 s for it, then prompts on its own"),
        StepUpWrapper.descriptor(
            PerUserCacheStore.self, "step-up-per-user-cache",
            "elevated tokens cached by user id, never dropped: a sign-out and sign-in of the same user keeps it"),
        StepUpWrapper.descriptor(
            UncancelledFlightStore.self, "step-up-uncancelled-flight",
            "a sign-out drops the elevated token but not the step-up in flight, which elevates for the ended session"),
    ]
}

/// The correct `MutexStore`, wrapped: each subclass breaks one step-up promise.
class StepUpWrapper: StepUpSessionStore, @unchecked Sendable {
    // SAFETY: subclasses keep their own state in Mutex/Atomic.
    let inner: MutexStore
    let configuration: SessionStoreConfiguration

    required init(configuration: SessionStoreConfiguration) {
        self.configuration = configuration
        inner = MutexStore(configuration: configuration)
    }

    func validToken() async throws(SessionError) -> AccessToken { try await inner.validToken() }
    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        try await inner.tokenRejected(token)
    }
    func signIn(_ credentials: Credentials) async throws(SessionError) { try await inner.signIn(credentials) }
    func signOut() async { await inner.signOut() }
    func makeClient() -> any SessionClient { inner.makeClient() }

    static func descriptor(_ type: StepUpWrapper.Type, _ name: String, _ summary: String) -> StoreDescriptor {
        StoreDescriptor(name: name, summary: summary + " (self-test)", isReferenceBroken: true, offersStepUp: true) {
            type.init(configuration: $0)
        }
    }

    /// Prompts and buys an elevated token, no coordination at all.
    func promptAndElevate() async throws(SessionError) -> ElevatedToken {
        let token = try await inner.validToken()
        guard let authenticator = configuration.authenticator,
            let endpoint = configuration.endpoint as? any StepUpEndpoint
        else { throw .stepUpFailed }
        switch await authenticator.prompt(for: token.subject) {
        case .denied: throw .stepUpDenied
        case .dismissed: throw .stepUpDismissed
        case .approved(let proof):
            do throws(TokenEndpointError) { return try await endpoint.elevate(token, proof: proof) } catch {
                throw .stepUpFailed
            }
        }
    }
}

/// A client of a ``StepUpWrapper`` whose calls are given as closures.
final class ClosureClient: SessionClient, @unchecked Sendable {
    let tokenBody: @Sendable () async throws(SessionError) -> AccessToken
    let elevatedBody: @Sendable () async throws(SessionError) -> ElevatedToken

    init(
        token: @escaping @Sendable () async throws(SessionError) -> AccessToken,
        elevated: @escaping @Sendable () async throws(SessionError) -> ElevatedToken
    ) {
        tokenBody = token
        elevatedBody = elevated
    }

    func token() async throws(SessionError) -> AccessToken { try await tokenBody() }
    func elevatedToken() async throws(SessionError) -> ElevatedToken { try await elevatedBody() }
}

/// I18: check the cached elevated token, then prompt: every concurrent caller prompts.
final class CheckThenPromptStore: StepUpWrapper, @unchecked Sendable {
    let cached = Mutex<ElevatedToken?>(nil)
    override func signOut() async {
        cached.withLock(visibleTo: self) { $0 = nil }
        await inner.signOut()
    }
    override func signIn(_ credentials: Credentials) async throws(SessionError) {
        cached.withLock(visibleTo: self) { $0 = nil }
        try await inner.signIn(credentials)
    }
    override func makeClient() -> any SessionClient {
        ClosureClient(token: { () async throws(SessionError) in try await self.inner.validToken() }) {
            () async throws(SessionError) in
            if let token = self.cached.withLock(visibleTo: self, { $0 }),
                token.isFresh(at: self.configuration.clock.now())
            {
                return token
            }
            let token = try await self.promptAndElevate()
            self.cached.withLock(visibleTo: self) { $0 = token }
            return token
        }
    }
}

/// I19: remembers a denial and refuses every later step-up without asking again.
final class StickyDenialStore: StepUpWrapper, @unchecked Sendable {
    let refused = Mutex<SessionError?>(nil)
    override func makeClient() -> any SessionClient {
        let client = inner.makeClient()
        return ClosureClient(token: { () async throws(SessionError) in try await client.token() }) {
            () async throws(SessionError) in
            if let refused = self.refused.withLock(visibleTo: self, { $0 }) { throw refused }
            do throws(SessionError) { return try await client.elevatedToken() } catch {
                if error.isStepUp { self.refused.withLock(visibleTo: self) { $0 = error } }
                throw error
            }
        }
    }
}

/// I11: a request whose task is cancelled while the prompt is open is told the user dismissed
/// it, as if the cancellation were the user's answer.
final class CancelledAsDismissedStore: StepUpWrapper, @unchecked Sendable {
    override func makeClient() -> any SessionClient {
        let client = inner.makeClient()
        return ClosureClient(token: { () async throws(SessionError) in try await client.token() }) {
            () async throws(SessionError) in
            do throws(SessionError) { return try await client.elevatedToken() } catch {
                throw error == .cancelled ? .stepUpDismissed : error
            }
        }
    }
}

/// I20: drops the elevated token on sign-out, but keeps it across another user's sign-in.
final class ElevationSurvivesSwitchStore: StepUpWrapper, @unchecked Sendable {
    let cached = Mutex<ElevatedToken?>(nil)
    override func signOut() async {
        cached.withLock(visibleTo: self) { $0 = nil }
        await inner.signOut()
    }
    override func makeClient() -> any SessionClient {
        let client = inner.makeClient()
        return ClosureClient(token: { () async throws(SessionError) in try await client.token() }) {
            () async throws(SessionError) in
            if let token = self.cached.withLock(visibleTo: self, { $0 }),
                token.isFresh(at: self.configuration.clock.now())
            {
                return token
            }
            let token = try await client.elevatedToken()
            self.cached.withLock(visibleTo: self) { $0 = token }
            return token
        }
    }
}

/// I21: one async queue for every auth operation, so a read waits while the user answers a prompt.
final class OneAuthQueueStore: StepUpWrapper, @unchecked Sendable {
    let queue = AsyncQueue()
    override func validToken() async throws(SessionError) -> AccessToken {
        await queue.acquire()
        defer { queue.release() }
        return try await inner.validToken()
    }
    override func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        await queue.acquire()
        defer { queue.release() }
        return try await inner.tokenRejected(token)
    }
    override func makeClient() -> any SessionClient {
        let client = inner.makeClient()
        return ClosureClient(token: { () async throws(SessionError) in try await self.validToken() }) {
            () async throws(SessionError) in
            await self.queue.acquire()
            defer { self.queue.release() }
            return try await client.elevatedToken()
        }
    }
}

/// A first-come lock for async code.
final class AsyncQueue: Sendable {
    private let state = Mutex<(busy: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))
    func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock(visibleTo: self) { state -> Bool in
                if !state.busy {
                    state.busy = true
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }
    func release() {
        let next = state.withLock(visibleTo: self) { state -> CheckedContinuation<Void, Never>? in
            if state.waiting.isEmpty {
                state.busy = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}

/// I22: an API object keeps the first token it got while it is fresh: after a user switch it
/// still sends the previous user's.
final class TokenCapturingClientStore: StepUpWrapper, @unchecked Sendable {
    override func makeClient() -> any SessionClient {
        let captured = TokenBox()
        let client = inner.makeClient()
        let clock = configuration.clock
        return ClosureClient(token: { () async throws(SessionError) in
            if let token = captured.token.withLock(visibleTo: captured, { $0 }), token.isFresh(at: clock.now()) {
                return token
            }
            let token = try await client.token()
            captured.token.withLock(visibleTo: captured) { $0 = token }
            return token
        }) { () async throws(SessionError) in try await client.elevatedToken() }
    }
}

final class TokenBox: Sendable {
    let token = Mutex<AccessToken?>(nil)
}

typealias ElevationResult = Result<ElevatedToken, SessionError>

/// A correct Mutex single flight (a Task per prompt) that subclasses bend in one place each.
class FlightStore: StepUpWrapper, @unchecked Sendable {
    struct Flight {
        var id: UInt64
        var epoch: UInt64
        var task: Task<ElevationResult, Never>
    }
    struct State {
        var epoch: UInt64 = 0
        var elevated: ElevatedToken?
        var flight: Flight?
        var ids: UInt64 = 0
    }
    let state = Mutex(State())

    /// Whether sign-out and sign-in end the flight and drop the elevated token.
    var endsOnFence: Bool { true }
    func end() {
        guard endsOnFence else { return }
        state.withLock(visibleTo: self) {
            $0.epoch &+= 1
            $0.elevated = nil
            $0.flight = nil
        }
    }
    override func signOut() async {
        end()
        await inner.signOut()
    }
    override func signIn(_ credentials: Credentials) async throws(SessionError) {
        end()
        try await inner.signIn(credentials)
    }
    var now: TokenInstant { configuration.clock.now() }
    func isCurrent(_ epoch: UInt64) -> Bool { state.withLock(visibleTo: self) { $0.epoch == epoch } }

    /// The flight's body: base token, prompt, elevation (the correct stores' own).
    func runFlight(epoch: UInt64) async -> ElevationResult {
        await ElevationCoordinator.stepUp(
            base: { () async throws(SessionError) in try await self.inner.validToken() },
            authenticator: configuration.authenticator, endpoint: configuration.endpoint as? any StepUpEndpoint,
            clock: configuration.clock, isCurrent: { self.isCurrent(epoch) })
    }
    /// Where a finished flight puts its outcome.
    func land(_ result: ElevationResult, id: UInt64, epoch: UInt64) {
        state.withLock(visibleTo: self) { state in
            guard state.epoch == epoch, state.flight?.id == id else { return }
            if case .success(let token) = result { state.elevated = token }
            state.flight = nil
        }
    }
    enum Join {
        case cached(ElevatedToken)
        case joined(Flight)
        case started(Flight)
    }
    func join() -> Join {
        state.withLock(visibleTo: self) { state -> Join in
            if let e = state.elevated, e.isFresh(at: now, margin: configuration.refreshSkew) { return .cached(e) }
            if let flight = state.flight { return .joined(flight) }
            state.ids &+= 1
            let (id, epoch) = (state.ids, state.epoch)
            let task = Task { () -> ElevationResult in
                let result = await self.runFlight(epoch: epoch)
                self.land(result, id: id, epoch: epoch)
                return result
            }
            let flight = Flight(id: id, epoch: epoch, task: task)
            state.flight = flight
            return .started(flight)
        }
    }
    func wait(_ flight: Flight, started: Bool) async throws(SessionError) -> ElevatedToken {
        let result = await flight.task.value
        guard isCurrent(flight.epoch) else { throw .signedOut }
        if case .success(let token) = result, !token.isFresh(at: now) { throw .stepUpFailed }
        return try result.get()
    }
    func elevated() async throws(SessionError) -> ElevatedToken {
        switch join() {
        case .cached(let token): return token
        case .joined(let flight): return try await wait(flight, started: false)
        case .started(let flight): return try await wait(flight, started: true)
        }
    }
    override func makeClient() -> any SessionClient {
        ClosureClient(token: { () async throws(SessionError) in try await self.inner.validToken() }) {
            () async throws(SessionError) in try await self.elevated()
        }
    }
}

/// Wrong: a joiner waits 1 s for the prompt in flight ("the sheet must have been lost"), then prompts itself.
final class WaiterTimeoutStore: FlightStore, @unchecked Sendable {
    override func wait(_ flight: Flight, started: Bool) async throws(SessionError) -> ElevatedToken {
        if started { return try await super.wait(flight, started: true) }
        let once = OnceBox()
        let finished = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            once.set(continuation)
            Task {
                _ = await flight.task.value
                once.resume(true)
            }
            Task {
                try? await Task.sleep(for: .seconds(1))
                once.resume(false)
            }
        }
        if finished { return try await super.wait(flight, started: false) }
        return try await promptAndElevate()
    }
}

final class OnceBox: Sendable {
    let continuation = Mutex<CheckedContinuation<Bool, Never>?>(nil)
    func set(_ c: CheckedContinuation<Bool, Never>) { continuation.withLock(visibleTo: self) { $0 = c } }
    func resume(_ value: Bool) { continuation.withLock(visibleTo: self) { $0.take() }?.resume(returning: value) }
}

/// Wrong: the outcome is handed to the request that started the prompt; joiners are only woken
/// (a notification), re-check the cache, and on a denial or dismissal start a prompt of their own.
final class FirstWaiterOnlyStore: FlightStore, @unchecked Sendable {
    override func wait(_ flight: Flight, started: Bool) async throws(SessionError) -> ElevatedToken {
        if started { return try await super.wait(flight, started: true) }
        _ = await flight.task.value
        guard isCurrent(flight.epoch) else { throw .signedOut }
        return try await elevated()
    }
}

/// Wrong: elevated tokens cached per user id (the subject of the base token), never dropped.
final class PerUserCacheStore: FlightStore, @unchecked Sendable {
    let byUser = Mutex<[Subject: ElevatedToken]>([:])
    override func elevated() async throws(SessionError) -> ElevatedToken {
        let subject = try await inner.validToken().subject
        if let token = byUser.withLock(visibleTo: self, { $0[subject] }),
            token.isFresh(at: now, margin: configuration.refreshSkew)
        {
            return token
        }
        let token = try await super.elevated()
        byUser.withLock(visibleTo: self) { $0[token.subject] = token }
        return token
    }
}

/// Wrong: sign-out and sign-in drop the elevated token, but the flight is not ended: it elevates
/// for the ended session and stores its token, which the next session then gets.
final class UncancelledFlightStore: FlightStore, @unchecked Sendable {
    override func end() { state.withLock(visibleTo: self) { $0.elevated = nil } }
    override func runFlight(epoch: UInt64) async -> ElevationResult {
        await ElevationCoordinator.stepUp(
            base: { () async throws(SessionError) in try await self.inner.validToken() },
            authenticator: configuration.authenticator, endpoint: configuration.endpoint as? any StepUpEndpoint,
            clock: configuration.clock, isCurrent: { true })
    }
}
