import SessionContract
import SessionStores
import SessionSync
import Synchronization

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
