import SessionContract
import SessionMeasurement
import SessionOracle
import SessionSync
import Synchronization
import TokenServer

/// Runs `session-states`: subscribers to a store's state, one and then `tasks` of them (and,
/// beside them, one slow subscriber that takes 1 ms over each state), through the events a UI
/// must follow. Each round: a sign-in, an expiry (a read refreshes), a 401 (a refresh), a
/// subscriber joining mid-session (its first state must be the current one), ten 401s back to
/// back, a sign-out while a refresh is held in flight at the server (released after the sign-out
/// returned: the store must discard it), a sign-in and a user switch, a revocation by the server
/// (a 401 refresh is refused), and at the end a sign-out.
///
/// After each event every subscriber's latest state must become the store's (signed in with the
/// new generation, signed out, revoked) within a deadline; the time from the call that made the
/// change to each subscriber's receipt of it is the observer lag (single events only, the slow
/// subscriber left out). Over each subscriber's whole sequence: nothing of a session after the
/// `signedOut` that ended it, nothing of a refresh that a sign-out discarded, and sessions and
/// generations never going back.
struct SessionStatesDriver: ContextDriver {
    let context: DriverContext

    /// How long a subscriber may take to see a change before it counts as never seeing it.
    static let deadline = Duration.seconds(2)

    /// What one subscriber received, with when (real nanoseconds).
    final class Log: Sendable {
        let received = Mutex<[(state: SessionState, at: Int64)]>([])
        var last: SessionState? { received.withLock(visibleTo: self) { $0.last?.state } }
        var all: [(state: SessionState, at: Int64)] { received.withLock(visibleTo: self) { $0 } }
    }

    /// Runs both phases; returns what each recorded, for ``StatesJudge`` after the run.
    func run(outcome: inout DriverOutcome) async -> [StatesHistory] {
        let started = ContinuousClock.now
        var refreshCalls = 0
        var recorded: [StatesHistory] = []
        for (count, kind) in [(1, OperationKind.observerLagOne), (scenario.tasks, .observerLagMany)] {
            let calls = await phase(observers: count, lag: kind, outcome: &outcome, recorded: &recorded)
            guard let calls else { break }
            refreshCalls += calls
        }
        outcome.observers = scenario.tasks
        outcome.refreshCalls = refreshCalls
        outcome.seconds = (ContinuousClock.now - started).secondsValue
        return recorded
    }

    /// One store, `observers` subscribers, every round; the server's refresh calls, or `nil` when
    /// the store hung. What the subscribers received is appended to `recorded`.
    func phase(
        observers: Int, lag: OperationKind, outcome: inout DriverOutcome, recorded: inout [StatesHistory]
    ) async -> Int? {
        let time = ManualTime()
        let server = TokenServer(configuration: scenario.serverConfiguration, clock: .manual(time))
        let skew = min(Duration.seconds(1), scenario.tokenLifetime / 4)
        let link = ServerLink(server, transport: runner.transport)
        defer { link.close() }
        let configuration = SessionStoreConfiguration(endpoint: link.endpoint, clock: .manual(time), refreshSkew: skew)
        guard let store = descriptor.make(configuration) as? any ObservableSessionStore else {
            outcome.failure =
                "\(descriptor.name) does not implement ObservableSessionStore: it cannot run session-states"
            return nil
        }
        // The subscribers and, beside many, one more that takes 1 ms over each state (a busy UI):
        // its lag is not timed, but it must end on every state like the others. The phase with
        // one subscriber has that one only.
        let slow = observers > 1
        let logs = (0..<(slow ? observers + 1 : observers)).map { _ in Log() }
        let subscribed = CompletionLatch<Void>(expected: logs.count)
        let readers = logs.enumerated().map { index, log in
            Task {
                let states = store.sessionStates()
                subscribed.finish(())
                for await state in states {
                    log.received.withLock(visibleTo: log) { $0.append((state, TokenServer.realNanoseconds())) }
                    if slow, index == observers { try? await Task.sleep(for: .milliseconds(1)) }
                }
            }
        }
        defer { for reader in readers { reader.cancel() } }
        guard await subscribed.wait(until: .now + runner.hangTimeout) != nil else {
            outcome.failure = "the subscribers' sessionStates() calls did not return"
            return nil
        }
        let calls = CallLog(users: StatesRun.users, clock: .manual(time), server: server)
        var run = StatesRun(
            context: context, observers: logs.count, timedObservers: observers, lag: lag, time: time, server: server,
            store: store, logs: logs, lifetime: scenario.tokenLifetime, calls: calls)
        func record(complete: Bool) {
            var history = run.history
            history.subscribers = logs.count
            history.received = logs.map { log in log.all.map { StatesHistory.Received($0.state, at: $0.at) } }
            history.ledger = server.ledger.entries
            history.complete = complete
            recorded.append(history)
        }
        for round in 0..<scenario.rounds {
            guard await run.play(round: round, last: round == scenario.rounds - 1, outcome: &outcome) else {
                record(complete: false)
                return nil
            }
        }
        record(complete: true)
        // Every call the subscribers' scenario made, judged against the contract like any other.
        var coverage = outcome.coverage ?? LifecycleCoverage()
        coverage.merge(calls.judge(skew: configuration.refreshSkew, into: oracle))
        outcome.coverage = coverage
        link.measure(into: &outcome)
        return server.ledger.refreshCalls
    }
}

/// One phase of `session-states`: the events, and the checks on what subscribers saw.
struct StatesRun: ContextDriver {
    let context: DriverContext
    let observers: Int
    /// The subscribers whose lag is timed: the first ones (a slow subscriber comes after them).
    let timedObservers: Int
    let lag: OperationKind
    let time: ManualTime
    let server: TokenServer
    let store: any ObservableSessionStore
    let logs: [SessionStatesDriver.Log]
    let lifetime: Duration
    /// Records and judges the store calls the events make.
    let calls: CallLog
    static let users = [Subject("observed-user-a@example.test"), Subject("observed-user-b@example.test")]
    var subjects: [Subject] { Self.users }
    /// What the driver saw after each change, and the refreshes a sign-out discarded.
    var history = StatesHistory()
    var current: AccessToken?
    /// Subscribers that already missed a change: reported once, and not waited for again.
    var lost: Set<Int> = []

    enum Change: Sendable {
        case token(Result<AccessToken, SessionError>)
        case done
    }

    mutating func play(round: Int, last: Bool, outcome: inout DriverOutcome) async -> Bool {
        let store = self.store
        let time = self.time
        let lifetime = self.lifetime
        let calls = self.calls
        let first = subjects[round % 2]
        let other = subjects[(round + 1) % 2]
        // Sign-in, expiry, 401.
        guard await signIn(first, event: "round \(round): sign-in", outcome: &outcome),
            await change(
                "round \(round): expiry", outcome: &outcome,
                { () async -> Change in
                    .token(await calls.call(.validToken, on: store, phase: "round \(round): expiry"))
                }, before: { time.advance(by: lifetime) }),
            await rejection("round \(round): 401", outcome: &outcome)
        else { return false }
        // A subscriber that joins mid-session hears the current state first (beside many: the
        // phase with one subscriber keeps that one alone).
        if timedObservers > 1 {
            guard await lateSubscriber(event: "round \(round): a subscriber joins while signed in") else {
                return false
            }
        }
        // Ten 401s back to back, no waiting for subscribers between them: only the last state counts.
        guard let token = current else { return false }
        guard
            await change(
                "round \(round): ten 401s back to back", outcome: &outcome, timed: false,
                { () async -> Change in
                    var latest = token
                    for _ in 0..<10 {
                        switch await calls.call(
                            .tokenRejected(latest), on: store, kind: .rejection, phase: "round \(round): ten 401s")
                        {
                        case .success(let token): latest = token
                        case .failure(let error): return .token(.failure(error))
                        }
                    }
                    return .token(.success(latest))
                })
        else { return false }
        // Sign-out while a refresh is in flight; the refresh lands after it.
        guard await signOutRacingRefresh(round: round, outcome: &outcome) else { return false }
        // Sign-in, then another user's sign-in with no sign-out between.
        guard await signIn(other, event: "round \(round): sign-in after sign-out", outcome: &outcome),
            await signIn(first, event: "round \(round): user switch", outcome: &outcome)
        else { return false }
        // The server revokes the session; a 401 finds out.
        server.revokeSessions(of: first)
        guard let revokedToken = current else { return false }
        guard
            await change(
                "round \(round): revocation", outcome: &outcome,
                { () async -> Change in
                    .token(
                        await calls.call(
                            .tokenRejected(revokedToken), on: store, kind: .rejection,
                            phase: "round \(round): revocation"))
                })
        else { return false }
        if last {
            return await change(
                "round \(round): sign-out", outcome: &outcome,
                { () async -> Change in
                    await calls.signOut(store)
                    return .done
                })
        }
        return true
    }

    /// A new subscriber's first state must be the store's current one, within the deadline.
    mutating func lateSubscriber(event: String) async -> Bool {
        guard let token = current else { return false }
        let expected = SessionState.signedIn(generation: token.generation)
        let store = self.store
        let first = CompletionLatch<SessionState?>(expected: 1)
        let reader = Task {
            var iterator = store.sessionStates().makeAsyncIterator()
            first.finish(await iterator.next())
        }
        defer { reader.cancel() }
        let got = await first.wait(until: .now + SessionStatesDriver.deadline)?.first ?? nil
        history.observations.append(
            .joined(event: event, expected: expected, first: got, within: SessionStatesDriver.deadline))
        return true
    }

    mutating func signIn(_ subject: Subject, event: String, outcome: inout DriverOutcome) async -> Bool {
        let store = self.store
        let calls = self.calls
        return await change(event, outcome: &outcome) { () async -> Change in
            do throws(SessionError) { try await calls.signIn(subject, on: store) } catch {
                return .token(.failure(error))
            }
            return .token(await calls.call(.validToken, on: store, phase: event))
        }
    }

    mutating func rejection(_ event: String, outcome: inout DriverOutcome) async -> Bool {
        guard let token = current else { return false }
        let store = self.store
        let calls = self.calls
        return await change(event, outcome: &outcome) { () async -> Change in
            .token(await calls.call(.tokenRejected(token), on: store, kind: .rejection, phase: event))
        }
    }

    mutating func signOutRacingRefresh(round: Int, outcome: inout DriverOutcome) async -> Bool {
        let event = "round \(round): sign-out during a refresh"
        server.setContext(event)
        server.gate.hold()
        time.advance(by: lifetime)
        let store = self.store
        let calls = self.calls
        let reader = Task { await calls.call(.validToken, on: store, kind: .refreshWait, phase: event) }
        let deadline = ContinuousClock.now + runner.hangTimeout
        while server.gate.waitingCount == 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(1))
        }
        guard
            await change(
                event, outcome: &outcome,
                { () async -> Change in
                    await calls.signOut(store)
                    return .done
                })
        else {
            server.gate.release()
            return false
        }
        let refreshesBefore = server.ledger.entries.count
        server.setContext("\(event): the refresh lands")
        server.gate.release()
        _ = await reader.value
        try? await Task.sleep(for: .milliseconds(5))
        for entry in server.ledger.entries.prefix(refreshesBefore) where entry.context == event {
            if let generation = entry.issuedGeneration { history.discarded.insert(generation) }
        }
        // Still signed out, for every subscriber, once the discarded refresh has landed.
        await waitUntil(.signedOut, event: "\(event), after the refresh landed")
        return true
    }

    /// Runs `body` (the call that changes the state), then waits until every subscriber's latest
    /// state is the store's new one, timing each subscriber's lag from the call's start.
    mutating func change(
        _ event: String, outcome: inout DriverOutcome, timed: Bool = true,
        _ body: @escaping @Sendable () async -> Change,
        before: () -> Void = {}
    ) async -> Bool {
        server.setContext(event)
        before()
        let latch = CompletionLatch<Change>(expected: 1)
        let start = TokenServer.realNanoseconds()
        Task {
            latch.enter()
            latch.finish(await body())
        }
        guard let change = await latch.wait(until: .now + runner.hangTimeout)?.first else {
            outcome.hang = .init(
                stuckCallers: 1, ofCallers: 1, operation: .signIn, waitedSeconds: runner.hangTimeout.secondsValue,
                phase: event, detail: "the store's call never returned")
            return false
        }
        let expected: SessionState
        switch change {
        case .done:
            expected = .signedOut
        case .token(.success(let token)):
            current = token
            expected = .signedIn(generation: token.generation)
        case .token(.failure(.refreshTokenRevoked)):
            expected = .revoked
        case .token(.failure(let error)):
            outcome.failure = "\(event): the store's call failed with '\(error)'"
            return false
        }
        outcome.operations += 1
        let seen = await waitUntil(expected, event: event)
        for case (let index, let at?) in seen where timed && index < timedObservers {
            outcome.latencies.record(lag, nanoseconds: max(0, at - start))
        }
        return true
    }
}
