import SessionContract
import TokenServer

/// Runs a scenario as synchronized rounds: each round sets up one event (an expiry, a 401,
/// a sign-out, a user switch), holds the server's refresh while every caller piles in, then
/// lets it go and checks what each caller got. Time is a ``ManualTime``, so an expiry hits
/// every caller at once and the schedule is the same for every store.
struct RoundDriver {
    let runner: ScenarioRunner
    let descriptor: StoreDescriptor
    let scenario: Scenario
    let oracle: Oracle

    /// What one caller observed. No token values: generation, whose token, expiry.
    struct Call: Sendable {
        let caller: Int
        let account: Int
        let kind: OperationKind
        let startedAt: TokenInstant
        let nanoseconds: Int64
        let outcome: Result<Issued, SessionError>
        let wasCancelled: Bool
    }

    struct Issued: Sendable, Hashable {
        let generation: UInt64
        /// Index of the account whose subject the token carries; `nil` if none of ours.
        let account: Int?
        let subjectSlot: Int?
        let expiresAt: TokenInstant
    }

    /// An outcome with the details that must agree between waiters of one refresh.
    enum Shared: Hashable, CustomStringConvertible {
        case token(UInt64)
        case error(SessionError)

        var description: String {
            switch self {
            case .token(let generation): "generation \(generation)"
            case .error(let error): "\(error)"
            }
        }
    }

    /// Allocations are not counted here: each round's callers are tasks the harness creates,
    /// and their cost cannot be told apart from the store's. Steady scenarios count them.
    func run(memory: AllocationCounter? = nil) async -> DriverOutcome {
        var state = RoundState(driver: self)
        state.memory = memory
        do {
            try await state.setUp()
        } catch {
            var outcome = DriverOutcome()
            outcome.failure = "sign-in failed before the run: \(error)"
            return outcome
        }
        let start = ContinuousClock.now
        for round in 0..<scenario.rounds {
            guard await state.play(round: round) else { break }
        }
        state.outcome.seconds = (ContinuousClock.now - start).seconds
        state.outcome.refreshCalls = state.server.ledger.refreshCalls
        return state.outcome
    }
}

/// The mutable side of a round-based run.
struct RoundState {
    let driver: RoundDriver
    let time = ManualTime()
    let server: TokenServer
    let stores: [any SessionStore]
    /// Two subjects per account: the user, and the one a user switch swaps in.
    let subjects: [[Subject]]
    var signedInSlot: [Int]
    var outcome = DriverOutcome()
    /// Last generation each caller index saw, for the monotonic check.
    var lastSeen: [Int: UInt64] = [:]
    /// Families whose session ended (sign-out or switch), by account.
    var endedFamilies: Set<UInt64> = []
    var familyOfGeneration: [UInt64: UInt64] = [:]
    var currentToken: [AccessToken?]
    var previousToken: [AccessToken?]
    var ledgerScanned = 0
    var random: SeededRandom
    /// Reads live heap bytes, for the scale storm's memory per waiter.
    var memory: AllocationCounter?

    var scenario: Scenario { driver.scenario }
    var oracle: Oracle { driver.oracle }
    var runner: ScenarioRunner { driver.runner }

    init(driver: RoundDriver) {
        self.driver = driver
        let scenario = driver.scenario
        let server = TokenServer(
            configuration: .init(
                tokenLifetime: scenario.tokenLifetime, latency: scenario.latency, faults: scenario.faults,
                seed: scenario.seed),
            clock: .manual(time))
        self.server = server
        let skew = min(Duration.seconds(1), scenario.tokenLifetime / 4)
        let configuration = SessionStoreConfiguration(endpoint: server, clock: .manual(time), refreshSkew: skew)
        stores = (0..<scenario.accounts).map { _ in driver.descriptor.make(configuration) }
        subjects = (0..<scenario.accounts).map { [Subject("account-\($0)-a"), Subject("account-\($0)-b")] }
        signedInSlot = Array(repeating: 0, count: scenario.accounts)
        currentToken = Array(repeating: nil, count: scenario.accounts)
        previousToken = currentToken
        random = SeededRandom(seed: scenario.seed ^ 0x5EED)
    }

    mutating func setUp() async throws(SessionError) {
        for account in stores.indices {
            guard try await signIn(account, slot: 0) else { throw .signInFailed }
        }
    }

    // MARK: One round

    /// Plays one round; `false` when the store hung and the run must stop.
    mutating func play(round: Int) async -> Bool {
        switch scenario.kind {
        case .steadyReads:
            preconditionFailure("steady-reads is not round-based")
        case .expiryStorm, .flakyServer, .cancellationStorm, .family:
            time.advance(by: scenario.tokenLifetime)
            return await storm(round: round, kind: .refreshWait)
        case .scaleStorm:
            await measureCallerFootprint()
            time.advance(by: scenario.tokenLifetime)
            return await storm(round: round, kind: .refreshWait, measuringMemory: true)
        case .rejectionStorm:
            return await rejectionRound(round: round)
        case .signOutRace:
            return await fenceRound(round: round, switchUser: false)
        case .userSwitch:
            return await fenceRound(round: round, switchUser: true)
        }
    }

    /// Every caller asks at once while the refresh is held; checks they shared it.
    mutating func storm(round: Int, kind: OperationKind, measuringMemory: Bool = false) async -> Bool {
        let ledgerStart = server.ledger.entries.count
        let tasks = scenario.tasks
        let cancelled = chooseCancelled(tasks)
        let rejected = currentToken
        let liveBefore = measuringMemory ? memory?.liveBytes() : nil
        let launched = launch(tasks, kind: kind, cancel: cancelled) { store, account throws(SessionError) in
            if kind == .rejection, let token = rejected[account] {
                return try await store.tokenRejected(token)
            }
            return try await store.validToken()
        }
        guard await waitForStorm(launched, expectedRefreshes: stores.count, phase: "round \(round)") else { return false }
        if let liveBefore, let memory, let callerBytes = outcome.callerBytesPerWaiter {
            // Parked callers allocate nothing more: once live memory stops moving, every caller
            // is parked behind the held refresh, and what is alive now is theirs.
            var previous = memory.liveBytes()
            var steadyReadings = 0
            let deadline = ContinuousClock.now + runner.hangTimeout
            while steadyReadings < 3, ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(10))
                let current = memory.liveBytes()
                steadyReadings = current == previous ? steadyReadings + 1 : 0
                previous = current
            }
            let perCaller = Double(Int64(previous) - Int64(liveBefore)) / Double(tasks)
            outcome.storeBytesPerWaiter = max(0, perCaller - callerBytes)
        }
        guard let calls = await finish(launched, phase: "round \(round)") else { return false }
        record(calls)
        let entries = Array(server.ledger.entries.dropFirst(ledgerStart))
        outcome.storms += stores.count
        outcome.stormCallers += tasks
        outcome.stormRefreshCalls += entries.count { $0.call == .refresh }
        check(calls, ledgerEntries: entries, round: round, ledgerStart: ledgerStart)
        return await recover(after: calls)
    }

    /// Parks the scale storm's crowd on bare continuations through the same harness path, to
    /// learn what a waiting caller costs before any store is involved.
    mutating func measureCallerFootprint() async {
        guard let memory, let token = currentToken.first ?? nil else { return }
        let lot = ParkingLot()
        let before = memory.liveBytes()
        let launched = launch(scenario.tasks, kind: .read, cancel: [], hold: false) { _, _ in
            await lot.park()
            return token
        }
        guard await launched.latch.waitForEntry(until: .now + runner.hangTimeout) else { return }
        _ = await CompletionLatch<Int>.poll(until: .now + runner.hangTimeout) { lot.parked == scenario.tasks }
        let parked = Double(Int64(memory.liveBytes()) - Int64(before)) / Double(scenario.tasks)
        lot.releaseAll()
        _ = await launched.latch.wait(until: .now + runner.hangTimeout)
        outcome.callerBytesPerWaiter = max(0, parked)
    }

    /// A 401 storm on the current token, then stale 401s that must not reach the server.
    mutating func rejectionRound(round: Int) async -> Bool {
        guard await storm(round: round, kind: .rejection) else { return false }
        let stale = previousToken
        guard stale.allSatisfy({ $0 != nil }) else { return true }
        let before = server.ledger.refreshCalls
        let probes = min(scenario.tasks, 8)
        guard
            let calls = await callers(
                probes, kind: .rejection, phase: "round \(round) stale 401s", expectedRefreshes: 0, cancel: [],
                call: { store, account throws(SessionError) in try await store.tokenRejected(stale[account]!) })
        else { return false }
        let after = server.ledger.refreshCalls
        if after != before {
            oracle.report(
                .staleRejectionDoesNotRefresh,
                "\(after - before) refresh call(s) for 401s on a token older than the current one (round \(round))",
                trace: ["round \(round): \(probes) callers reported 401 for generation(s) \(Set(stale.map { $0!.generation }).sorted())"])
        }
        for call in calls {
            if case .success(let issued) = call.outcome, let current = currentToken[call.account],
                issued.generation != current.generation
            {
                oracle.report(
                    .staleRejectionDoesNotRefresh,
                    "a stale 401 returned generation \(issued.generation), not the current \(current.generation)")
            }
        }
        return true
    }

    /// Callers wait on a held refresh; the session ends (sign-out or another user) before it
    /// lands; callers that start afterwards must get nothing of the ended session.
    mutating func fenceRound(round: Int, switchUser: Bool) async -> Bool {
        time.advance(by: scenario.tokenLifetime)
        let account = 0
        let store = stores[account]
        let refreshesBefore = server.ledger.refreshCalls
        let endedFamily = currentToken[account].flatMap { familyOfGeneration[$0.generation] }
        let fencePhase = switchUser ? "user switch" : "sign-out"
        let launched = launch(scenario.tasks, kind: .refreshWait, cancel: []) { store, _ throws(SessionError) in
            try await store.validToken()
        }
        guard await waitForStorm(launched, expectedRefreshes: 1, phase: "round \(round)") else { return false }
        // End the session while the refresh is held at the server.
        let fenceStart = TokenClock.system.now()
        // The refresh is still held here: the coordinator must not wait on a token until it
        // is released, and every call it makes is watched.
        if switchUser {
            let nextSlot = 1 - signedInSlot[account]
            do {
                guard try await signIn(account, slot: nextSlot, fetchToken: false) else {
                    server.gate.release()
                    return false
                }
            } catch {
                outcome.failure = "sign-in of the next user failed: \(error)"
                server.gate.release()
                return false
            }
        } else {
            guard await watched(.signOut, phase: "sign-out", { await store.signOut() }) != nil else {
                server.gate.release()
                return false
            }
            currentToken[account] = nil
            outcome.latencies.record(.signOut, nanoseconds: TokenClock.system.now().nanoseconds - fenceStart.nanoseconds)
            outcome.operations += 1
        }
        if let endedFamily { endedFamilies.insert(endedFamily) }
        server.gate.release()
        guard let waiters = await finish(launched, phase: "round \(round) after \(fencePhase)") else { return false }
        record(waiters)
        // Let the held refresh land in the store before probing for it.
        let landed = await CompletionLatch<Int>.poll(until: .now + runner.hangTimeout) {
            server.ledger.refreshCalls > refreshesBefore
        }
        if landed { try? await Task.sleep(for: .milliseconds(2)) }
        let probes = min(scenario.tasks, 8)
        guard
            let after = await callers(
                probes, kind: .read, phase: "round \(round) probes after \(fencePhase)", expectedRefreshes: 0,
                cancel: [], call: { store, _ throws(SessionError) in try await store.validToken() })
        else { return false }
        scanLedger()
        for call in after {
            guard case .success(let issued) = call.outcome else { continue }
            let family = familyOfGeneration[issued.generation]
            if let family, endedFamilies.contains(family) {
                oracle.report(
                    switchUser ? .noCrossUserLeak : .signOutFence,
                    "after the \(fencePhase) returned, a call got generation \(issued.generation) of the ended session",
                    trace: [
                        "round \(round): the store's refresh was held at the server with \(scenario.tasks) callers waiting",
                        "\(fencePhase) returned; the held refresh was then released and landed",
                        "a call started after the \(fencePhase) returned generation \(issued.generation) (family \(family), ended)",
                    ])
            } else if switchUser, issued.subjectSlot != signedInSlot[account] {
                oracle.report(
                    .noCrossUserLeak, "after the user switch a call got the previous user's token (generation \(issued.generation))")
            }
        }
        if switchUser { return await refreshCurrentToken(account) }
        do { return try await signIn(account, slot: signedInSlot[account]) } catch {
            outcome.failure = "sign-in after sign-out failed: \(error)"
            return false
        }
    }
}
