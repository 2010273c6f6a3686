import SessionContract
import TokenServer

/// Runs a scenario as synchronized rounds: each round sets up one event (an expiry, a 401,
/// a sign-out, a user switch), holds the server's refresh while callers pile in (some before
/// the refresh is sent, some while it is in flight, some as it lands), then checks what each
/// caller got. Time is a ``ManualTime``, so an expiry hits every caller at once and the
/// schedule is the same for every store. Faults and cancellations follow a seeded schedule
/// in which every fault class the scenario is about occurs in every run.
struct RoundDriver {
    let runner: ScenarioRunner
    let descriptor: StoreDescriptor
    let scenario: Scenario
    let oracle: Oracle
    let watch: StarvationWatch?

    /// With a counter, the scale storm counts allocations and live memory per waiting caller,
    /// less what the same crowd costs on bare continuations (each caller is a task the harness
    /// creates). Smaller storms do not: the coordinator's own allocations while it waits for a
    /// crowd of 64 to settle vary by more than a store's whole per-waiter cost.
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
        state.outcome.seconds = (ContinuousClock.now - start).secondsValue
        state.finish()
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
    /// The highest generation handed out over time, for the monotonic check.
    var watermark = Watermark()
    /// Sign-ins and sign-outs the harness made, by account.
    var events: [SessionEvent] = []
    var accountOfFamily: [UInt64: Int] = [:]
    var familyOfGeneration: [UInt64: UInt64] = [:]
    var observedGenerations: Set<UInt64> = []
    var currentToken: [AccessToken?]
    var previousToken: [AccessToken?]
    var ledgerScanned = 0
    var random: SeededRandom
    /// Flaky rounds: which fault each round gets, drawn once from the seed.
    let faultPlan: [RoundFault]
    /// Counts allocations per storm caller, and reads live heap bytes for the scale storm's
    /// memory per waiter.
    var memory: AllocationCounter?

    var scenario: Scenario { driver.scenario }
    var oracle: Oracle { driver.oracle }
    var runner: ScenarioRunner { driver.runner }

    init(driver: RoundDriver) {
        self.driver = driver
        let scenario = driver.scenario
        var random = SeededRandom(seed: scenario.seed ^ 0x5EED)
        // Flaky rounds script their faults, so none is left to chance; other scenarios keep
        // the server's random faults, if any were asked for.
        let scripted = scenario.kind == .flakyServer
        faultPlan = scripted ? RoundFault.plan(rounds: scenario.rounds, faults: scenario.faults, random: &random) : []
        var faults = scenario.faults
        if scripted { faults = FaultModel(timeoutAfter: scenario.faults.timeoutAfter) }
        let server = TokenServer(
            configuration: .init(
                tokenLifetime: scenario.tokenLifetime, latency: scenario.latency, faults: faults, seed: scenario.seed),
            clock: .manual(time))
        self.server = server
        let skew = min(Duration.seconds(1), scenario.tokenLifetime / 4)
        let configuration = SessionStoreConfiguration(endpoint: server, clock: .manual(time), refreshSkew: skew)
        stores = (0..<scenario.accounts).map { _ in driver.descriptor.make(configuration) }
        subjects = (0..<scenario.accounts).map { [Subject("account-\($0)-a"), Subject("account-\($0)-b")] }
        signedInSlot = Array(repeating: 0, count: scenario.accounts)
        currentToken = Array(repeating: nil, count: scenario.accounts)
        previousToken = currentToken
        self.random = random
    }

    mutating func setUp() async throws(SessionError) {
        server.setContext("sign-in before the run")
        for account in stores.indices {
            guard try await signIn(account, slot: 0) else { throw .signInFailed }
        }
    }

    /// Checks over the whole run: every refresh the server saw.
    mutating func finish() {
        scanLedger()
        outcome.refreshCalls = server.ledger.refreshCalls
        let observed = observedGenerations
        oracle.auditLedger(server.ledger.entries) { observed.contains($0) }
    }

    // MARK: One round

    /// Plays one round; `false` when the store hung and the run must stop.
    mutating func play(round: Int) async -> Bool {
        server.setContext("round \(round)")
        switch scenario.kind {
        case .steadyReads:
            preconditionFailure("steady-reads is not round-based")
        case .expiryStorm, .family:
            time.advance(by: scenario.tokenLifetime)
            return await staggeredStorm(round: round, rejecting: false, racing: false)
        case .flakyServer:
            return await flakyRound(round: round, fault: faultPlan[round % max(faultPlan.count, 1)])
        case .cancellationStorm:
            return await cancellationRound(round: round)
        case .scaleStorm:
            await measureCallerFootprint()
            time.advance(by: scenario.tokenLifetime)
            return await scaleStorm(round: round)
        case .rejectionStorm:
            return await rejectionRound(round: round)
        case .signOutRace:
            return round % 2 == 0
                ? await inFlightFenceRound(round: round, switchUser: false)
                : await cachedFenceRound(round: round, switchUser: false)
        case .userSwitch:
            return round % 2 == 0
                ? await inFlightFenceRound(round: round, switchUser: true)
                : await cachedFenceRound(round: round, switchUser: true)
        }
    }

    // MARK: The coordinator's own calls

    /// Signs `account` in as its user in `slot` (0 or 1), timing it. Throws the sign-in's
    /// error; returns `false` if the store hung.
    mutating func signIn(_ account: Int, slot: Int, fetchToken: Bool = true) async throws(SessionError) -> Bool {
        let store = stores[account], credentials = Credentials(subject: subjects[account][slot])
        let t0 = TokenServer.realNanoseconds()
        let result = await watched(.signIn, phase: "sign-in") { () async -> Result<Void, SessionError> in
            do throws(SessionError) { return .success(try await store.signIn(credentials)) } catch { return .failure(error) }
        }
        guard let result else { return false }
        let t1 = TokenServer.realNanoseconds()
        scanLedger()
        let family = server.ledger.entries.last { $0.call == .signIn && $0.sentAt >= t0 && $0.sentAt <= t1 }?.family
        if let family { accountOfFamily[family] = account }
        events.append(SessionEvent(account: account, kind: .signIn(slot: slot, family: family), startedNanos: t0, returnedNanos: t1))
        try result.get()
        outcome.latencies.record(.signIn, nanoseconds: t1 - t0)
        outcome.operations += 1
        signedInSlot[account] = slot
        previousToken[account] = nil
        currentToken[account] = nil
        if fetchToken { return await readCurrentToken(account, phase: "read after sign-in") != nil }
        return true
    }

    /// Signs `account` out, timing it; `false` if the store hung.
    mutating func signOut(_ account: Int) async -> Bool {
        let store = stores[account]
        let t0 = TokenServer.realNanoseconds()
        guard await watched(.signOut, phase: "sign-out", { await store.signOut() }) != nil else { return false }
        let t1 = TokenServer.realNanoseconds()
        events.append(SessionEvent(account: account, kind: .signOut, startedNanos: t0, returnedNanos: t1))
        outcome.latencies.record(.signOut, nanoseconds: t1 - t0)
        outcome.operations += 1
        currentToken[account] = nil
        return true
    }

    /// One `validToken()` of the coordinator's, judged like any caller's. `nil` if the store
    /// hung; otherwise the call (its outcome may be an error).
    mutating func readCurrentToken(_ account: Int, phase: String) async -> ObservedCall? {
        let store = stores[account], subjects = self.subjects, time = self.time
        let observed = await watched(.read, phase: phase) { () async -> (ObservedCall, AccessToken?) in
            let startedAt = time.now
            let t0 = TokenServer.realNanoseconds()
            let result: Result<AccessToken, SessionError>
            do throws(SessionError) { result = .success(try await store.validToken()) } catch { result = .failure(error) }
            let t1 = TokenServer.realNanoseconds()
            let call = ObservedCall(
                caller: -1, account: account, kind: .read, phase: phase, startedAt: startedAt, startedNanos: t0,
                endedNanos: t1, outcome: result.map { ObservedCall.issued($0, subjects: subjects) }, wasCancelled: false)
            return (call, try? result.get())
        }
        guard let (call, token) = observed else { return nil }
        record([call])
        if let token {
            if token.generation != currentToken[account]?.generation { previousToken[account] = currentToken[account] }
            currentToken[account] = token
        }
        return call
    }

    /// After a storm: note the new current token; sign back in where the session was lost.
    /// `false` if the store hung.
    mutating func recover(after calls: [ObservedCall]) async -> Bool {
        for account in stores.indices {
            let outcomes = calls.filter { $0.account == account }.map(\.outcome)
            let lost = outcomes.contains { $0.failureValue == .refreshTokenRevoked || $0.failureValue == .signedOut }
            if lost {
                do { guard try await signIn(account, slot: signedInSlot[account]) else { return false } } catch {
                    outcome.failure = "sign-in after a lost session failed: \(error)"
                    return false
                }
            } else {
                guard let call = await readCurrentToken(account, phase: "read after the round") else { return false }
                if case .failure(let error) = call.outcome, error == .refreshTokenRevoked || error == .signedOut {
                    do { guard try await signIn(account, slot: signedInSlot[account]) else { return false } } catch {
                        outcome.failure = "sign-in after a lost session failed: \(error)"
                        return false
                    }
                }
            }
        }
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
}
