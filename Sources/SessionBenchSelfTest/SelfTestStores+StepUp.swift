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
