import SessionContract
import SessionMeasurement
import SessionOracle
import SessionSync
import Synchronization
import TokenServer

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
        let waitStart = ContinuousClock.now
        guard let change = await latch.patientValues(hangTimeout: runner.hangTimeout)?.first else {
            outcome.hang = .init(
                stuckCallers: 1, ofCallers: 1, operation: .signIn,
                waitedSeconds: (ContinuousClock.now - waitStart).secondsValue,
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
