import SessionContract
import TokenServer

/// Launching callers, holding their refresh, and waiting for them under the watchdog.
extension RoundState {
    typealias Body = @Sendable (any SessionStore, Int) async throws(SessionError) -> AccessToken

    struct Launched {
        let latch: CompletionLatch<RoundDriver.Call>
        let tasks: [Task<Void, Never>]
        let count: Int
        let kind: OperationKind
        let cancel: Set<Int>
        let arrivalsBefore: Int
    }

    /// Starts `count` callers, caller `i` on account `i % accounts`, released together.
    /// Holds the server's refreshes first, so the storm builds up behind one.
    func launch(_ count: Int, kind: OperationKind, cancel: Set<Int>, hold: Bool = true, call: @escaping Body) -> Launched {
        let arrivalsBefore = server.gate.arrivals
        if hold { server.gate.hold() }
        let line = StartLine(count: count)
        let latch = CompletionLatch<RoundDriver.Call>(expected: count)
        let stores = self.stores, subjects = self.subjects, time = self.time
        let tasks = (0..<count).map { caller in
            Task {
                let account = caller % stores.count
                await line.arriveAndWait()
                latch.enter()
                let startedAt = time.now
                let t0 = TokenClock.system.now().nanoseconds
                let result: Result<AccessToken, SessionError>
                do throws(SessionError) { result = .success(try await call(stores[account], account)) } catch {
                    result = .failure(error)
                }
                let t1 = TokenClock.system.now().nanoseconds
                latch.finish(
                    RoundDriver.Call(
                        caller: caller, account: account, kind: kind, startedAt: startedAt, nanoseconds: t1 - t0,
                        outcome: result.map { Self.issued($0, subjects: subjects) }, wasCancelled: cancel.contains(caller)))
            }
        }
        return Launched(latch: latch, tasks: tasks, count: count, kind: kind, cancel: cancel, arrivalsBefore: arrivalsBefore)
    }

    static func issued(_ token: AccessToken, subjects: [[Subject]]) -> RoundDriver.Issued {
        for (account, pair) in subjects.enumerated() {
            if let slot = pair.firstIndex(of: token.subject) {
                return .init(generation: token.generation, account: account, subjectSlot: slot, expiresAt: token.expiresAt)
            }
        }
        return .init(generation: token.generation, account: nil, subjectSlot: nil, expiresAt: token.expiresAt)
    }

    /// Waits until every caller is in and the expected refreshes reached the server, lets
    /// stragglers park, then cancels the chosen callers. `false` (and a hang) on timeout.
    mutating func waitForStorm(_ launched: Launched, expectedRefreshes: Int, phase: String) async -> Bool {
        let entered = await launched.latch.waitForEntry(until: .now + runner.hangTimeout)
        guard entered else {
            server.gate.release()
            outcome.hang = .init(
                stuckCallers: launched.count - launched.latch.enteredCount, ofCallers: launched.count,
                operation: launched.kind, waitedSeconds: runner.hangTimeout.seconds, phase: "\(phase): start")
            return false
        }
        if expectedRefreshes > 0 {
            // A store that never refreshes is not waited for long: its callers are checked anyway.
            let gate = server.gate
            _ = await CompletionLatch<Int>.poll(until: .now + .milliseconds(200)) {
                gate.arrivals >= launched.arrivalsBefore + expectedRefreshes
            }
        }
        try? await Task.sleep(for: runner.settle)
        if !launched.cancel.isEmpty {
            for caller in launched.cancel { launched.tasks[caller].cancel() }
            try? await Task.sleep(for: runner.settle)
        }
        return true
    }

    /// Releases the held refresh and collects every caller, or records a hang.
    mutating func finish(_ launched: Launched, phase: String) async -> [RoundDriver.Call]? {
        server.gate.release()
        let started = ContinuousClock.now
        guard let calls = await launched.latch.wait(until: started + runner.hangTimeout) else {
            outcome.hang = .init(
                stuckCallers: launched.count - launched.latch.finishedCount, ofCallers: launched.count,
                operation: launched.kind, waitedSeconds: runner.hangTimeout.seconds, phase: phase)
            return nil
        }
        return calls
    }

    /// Launch, hold, release, collect and record in one go.
    mutating func callers(
        _ count: Int, kind: OperationKind, phase: String, expectedRefreshes: Int, cancel: Set<Int>, call: @escaping Body
    ) async -> [RoundDriver.Call]? {
        let launched = launch(count, kind: kind, cancel: cancel, hold: expectedRefreshes > 0, call: call)
        if expectedRefreshes > 0 {
            guard await waitForStorm(launched, expectedRefreshes: expectedRefreshes, phase: phase) else { return nil }
        }
        guard let calls = await finish(launched, phase: phase) else { return nil }
        record(calls)
        return calls
    }

    /// Latency, operation counts, and the per-call invariants (fresh, monotonic).
    mutating func record(_ calls: [RoundDriver.Call]) {
        for call in calls {
            outcome.operations += 1
            outcome.latencies.record(call.kind, nanoseconds: call.nanoseconds)
            guard case .success(let issued) = call.outcome else { continue }
            if issued.expiresAt <= call.startedAt {
                oracle.report(
                    .fresh, "caller \(call.caller) got generation \(issued.generation), already expired when it asked")
            }
            let seen = lastSeen[call.caller, default: 0]
            if issued.generation < seen {
                oracle.report(
                    .monotonic, "caller \(call.caller) got generation \(issued.generation) after it had seen \(seen)")
            }
            lastSeen[call.caller] = max(seen, issued.generation)
        }
    }

    /// Runs one call of the coordinator's own under the watchdog: a store that never
    /// answers becomes a hang report, never a stuck tool. `nil` when it timed out.
    mutating func watched<T: Sendable>(
        _ operation: OperationKind, phase: String, _ body: @escaping @Sendable () async -> T
    ) async -> T? {
        let latch = CompletionLatch<T>(expected: 1)
        Task {
            latch.enter()
            latch.finish(await body())
        }
        guard let value = await latch.wait(until: .now + runner.hangTimeout)?.first else {
            outcome.hang = .init(
                stuckCallers: 1, ofCallers: 1, operation: operation, waitedSeconds: runner.hangTimeout.seconds,
                phase: phase)
            return nil
        }
        return value
    }

    /// Signs `account` in as its user in `slot` (0 or 1), timing it. Throws the sign-in's
    /// error; returns `false` if the store hung.
    mutating func signIn(_ account: Int, slot: Int, fetchToken: Bool = true) async throws(SessionError) -> Bool {
        let store = stores[account], credentials = Credentials(subject: subjects[account][slot])
        let t0 = TokenClock.system.now().nanoseconds
        let result = await watched(.signIn, phase: "sign-in") { () async -> Result<Void, SessionError> in
            do throws(SessionError) { return .success(try await store.signIn(credentials)) } catch { return .failure(error) }
        }
        guard let result else { return false }
        try result.get()
        outcome.latencies.record(.signIn, nanoseconds: TokenClock.system.now().nanoseconds - t0)
        outcome.operations += 1
        signedInSlot[account] = slot
        previousToken[account] = nil
        scanLedger()
        if fetchToken { return await refreshCurrentToken(account) }
        return true
    }

    /// Notes the store's current token (no refresh expected: it was just issued or refreshed).
    mutating func refreshCurrentToken(_ account: Int) async -> Bool {
        let store = stores[account]
        let token = await watched(.read, phase: "reading the current token") { try? await store.validToken() }
        guard let token else { return false }
        if let token, token.generation != currentToken[account]?.generation {
            previousToken[account] = currentToken[account]
        }
        currentToken[account] = token ?? currentToken[account]
        return true
    }

    /// Learns which family every newly issued generation belongs to.
    mutating func scanLedger() {
        let entries = server.ledger.entries
        for entry in entries.dropFirst(ledgerScanned) {
            if let generation = entry.issuedGeneration { familyOfGeneration[generation] = entry.family }
        }
        ledgerScanned = entries.count
    }

    /// The callers to cancel this round, drawn from the scenario's seed.
    mutating func chooseCancelled(_ count: Int) -> Set<Int> {
        let wanted = Int(Double(count) * scenario.cancelFraction)
        var chosen = Set<Int>()
        while chosen.count < wanted { chosen.insert(Int(random.next() % UInt64(count))) }
        return chosen
    }
}
