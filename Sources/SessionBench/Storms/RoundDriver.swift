import SessionContract
import SessionMeasurement
import SessionOracle
import TokenServer

/// Runs a scenario as synchronized rounds: each round sets up one event (an expiry, a 401,
/// a sign-out, a user switch), holds the server's refresh while callers pile in (some before
/// the refresh is sent, some while it is in flight, some as it lands), then checks what each
/// caller got. Time is a ``ManualTime``, so an expiry hits every caller at once and the
/// schedule is the same for every store. Faults and cancellations follow a seeded schedule
/// in which every fault class the scenario is about occurs in every run.
struct RoundDriver: ContextDriver {
    let context: DriverContext

    let time = ManualTime()
    let server: TokenServer
    /// The server as the stores reach it: in process, or over the runner's transport.
    let link: ServerLink
    let stores: [any SessionStore]
    /// For a store that keeps its session in a storage: each account's, in memory.
    let storages: [MemoryStorage?]
    /// Two subjects per account: the user, and the one a user switch swaps in.
    let subjects: [[Subject]]
    var signedInSlot: [Int]
    var outcome: DriverOutcome
    /// Judges every call against the contract's model of the run.
    var contract: ContractJudge
    /// What the round under way recorded, not judged yet.
    var history = StormRound(number: 0)
    /// Which of the lifecycle's transitions the run drove.
    var coverage = LifecycleCoverage()
    /// Sign-ins and sign-outs the harness made, by account.
    var events: [SessionEvent] = []
    var accountOfFamily: [UInt64: Int] = [:]
    var observedGenerations: Set<UInt64> = []
    var currentToken: [AccessToken?]
    var previousToken: [AccessToken?]
    var random: SeededRandom
    /// Whether the coordinator's sign-ins and sign-outs are timed: not while a save the harness
    /// holds open keeps them waiting (``savingFenceRound(round:fence:)``).
    var timesFences = true
    /// Flaky rounds: which fault each round gets, drawn once from the seed.
    let faultPlan: [RoundFault]
    /// Counts allocations per storm caller, and reads live heap bytes for the scale storm's
    /// memory per waiter.
    var memory: AllocationCounter?

    init(_ context: DriverContext, outcome: DriverOutcome) {
        self.outcome = outcome
        self.context = context
        let (runner, descriptor, scenario) = (context.runner, context.descriptor, context.scenario)
        var random = SeededRandom(seed: scenario.seed ^ 0x5EED)
        // Flaky rounds script their faults, so none is left to chance; other scenarios keep
        // the server's random faults, if any were asked for.
        let scripted = scenario.kind == .flakyServer
        faultPlan = scripted ? RoundFault.plan(rounds: scenario.rounds, faults: scenario.faults, random: &random) : []
        var serverConfiguration = scenario.serverConfiguration
        if scripted { serverConfiguration.faults = FaultModel(timeoutAfter: scenario.faults.timeoutAfter) }
        let server = TokenServer(configuration: serverConfiguration, clock: .manual(time))
        self.server = server
        link = ServerLink(server, transport: runner.transport)
        let skew = min(Duration.seconds(1), scenario.tokenLifetime / 4)
        let configuration = SessionStoreConfiguration(endpoint: link.endpoint, clock: .manual(time), refreshSkew: skew)
        contract = ContractJudge(skew: configuration.refreshSkew, paced: scenario.pace != nil)
        // A store that keeps its session gets a storage (in memory: the storms measure the store),
        // and the contract's storage promises are judged at every event.
        storages = (0..<scenario.accounts).map { _ in
            descriptor.persistsSession ? MemoryStorage(pairing: { [server] in server.issuedGeneration(of: $0) }) : nil
        }
        stores = storages.map { storage in
            var configuration = configuration
            configuration.storage = storage
            return descriptor.make(configuration)
        }
        // What a store with a synchronous read serves while it saves, seen from a thread of the
        // harness's own: persist before publish judged without waiting for a caller to come back
        // in that window.
        for (storage, store) in zip(storages, stores) {
            if let storage, let reader = store as? any SynchronousTokenReading { storage.watch(reader) }
        }
        subjects = (0..<scenario.accounts).map { [Subject("account-\($0)-a"), Subject("account-\($0)-b")] }
        signedInSlot = Array(repeating: 0, count: scenario.accounts)
        currentToken = Array(repeating: nil, count: scenario.accounts)
        previousToken = currentToken
        self.random = random
    }

    /// With a counter, the scale storm counts allocations and live memory per waiting caller,
    /// less what the same crowd costs on bare continuations (each caller is a task the harness
    /// creates). Smaller storms do not: the coordinator's own allocations while it waits for a
    /// crowd of 64 to settle vary by more than a store's whole per-waiter cost.
    mutating func run(memory: AllocationCounter? = nil) async -> DriverOutcome {
        self.memory = memory
        let initial = outcome
        do {
            try await setUp()
        } catch {
            // Nothing of a run that could not start is reported but why: a hang where the store did
            // not return (the read right after sign-in, say), else the failed sign-in.
            var failed = initial
            if let hang = outcome.hang {
                failed.hang = hang
            } else {
                failed.failure = "sign-in failed before the run: \(error)"
            }
            return failed
        }
        let start = ContinuousClock.now
        var roundStarted: ContinuousClock.Instant?
        for round in 0..<scenario.rounds {
            if let pace = scenario.pace, let roundStarted, roundStarted + pace > .now {
                await pause(roundStarted + pace - .now)
            }
            roundStarted = .now
            history.number = round
            let played = await play(round: round)
            judgeRound()
            guard played else { break }
        }
        outcome.seconds = (ContinuousClock.now - start).secondsValue
        finish()
        return outcome
    }

    mutating func setUp() async throws(SessionError) {
        server.setContext("sign-in before the run")
        for account in stores.indices {
            guard try await signIn(account, slot: 0) else { throw .signInFailed }
        }
    }

    /// Checks over the whole run: every refresh the server saw.
    mutating func finish() {
        judgeRound()
        outcome.coverage = coverage
        if !contract.refusedByStoreLimit.isEmpty { outcome.refusedByStoreLimit = contract.refusedByStoreLimit.count }
        outcome.refreshCalls = server.ledger.refreshCalls
        link.measure(into: &outcome)
        link.close()
        for storage in storages { storage?.close() }
        let observed = observedGenerations
        oracle.auditLedger(server.ledger.entries) { observed.contains($0) }
        oracle.record(contract.serverCallFindings(timeline()))
    }

    // MARK: One round

    /// Moves the clock to the instant the accounts' current tokens expire (the latest of them),
    /// less `short`; by a token lifetime when no token is known.
    func advancePastExpiry(short: Duration = .zero) {
        let expiries = currentToken.compactMap { $0?.expiresAt }
        guard let latest = expiries.max(), latest > time.now else {
            time.advance(by: scenario.tokenLifetime - short)
            return
        }
        time.advance(by: latest.duration(since: time.now) - short)
    }

    /// Plays one round; `false` when the store hung and the run must stop.
    mutating func play(round: Int) async -> Bool {
        server.setContext("round \(round)")
        switch scenario.kind {
        case .expiryStorm, .family:
            // Odd rounds stop short of expiry, halfway into the refresh skew: the token is due,
            // not expired, and must be refreshed all the same. (Not on the skew's edge: whether a
            // token exactly `skew` from expiry is due is the store's to decide.) Every third
            // round's refresh brings a token that lives half as long: a store must read each
            // token's own expiry.
            advancePastExpiry(short: round % 2 == 1 ? contract.skew / 2 : .zero)
            server.setTokenLifetime(round % 3 == 2 ? scenario.tokenLifetime / 2 : nil)
            defer { server.setTokenLifetime(nil) }
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
            // A store that keeps its session meets a sixth kind of round: the fence during its save.
            let cycle = storages.contains { $0 != nil } ? 6 : 5
            switch round % cycle {
            case 0: return await inFlightFenceRound(round: round, fence: .signOut)
            case 1: return await cachedFenceRound(round: round, fence: .signOut)
            case 2: return await inFlightFenceRound(round: round, fence: .signOutAndBack)
            case 3: return await cachedFenceRound(round: round, fence: .signOutTwice)
            case 4:
                return await heldSignInRound(round: round, overtaking: .signOut, bothHeld: round / cycle % 2 == 1)
            default:
                // In turn, the refresh's save or a sign-in's.
                return round / cycle % 2 == 1
                    ? await savingSignInRound(round: round, fence: .signOut)
                    : await savingFenceRound(round: round, fence: .signOut)
            }
        case .userSwitch:
            let cycle = storages.contains { $0 != nil } ? 6 : 5
            switch round % cycle {
            case 0: return await inFlightFenceRound(round: round, fence: .userSwitch)
            case 1: return await cachedFenceRound(round: round, fence: .userSwitch)
            case 2: return await inFlightFenceRound(round: round, fence: .signInAgain)
            case 3: return await cachedFenceRound(round: round, fence: .refusedSwitch)
            case 4:
                return await heldSignInRound(round: round, overtaking: .userSwitch, bothHeld: round / cycle % 2 == 1)
            default:
                return round / cycle % 2 == 1
                    ? await savingSignInRound(round: round, fence: .userSwitch)
                    : await savingFenceRound(round: round, fence: .userSwitch)
            }
        default:
            preconditionFailure("Internal inconsistency: \(scenario.kind.rawValue) is not a storm (StormFamily.kinds)")
        }
    }
}
