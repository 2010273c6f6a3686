import SessionContract
import SessionOracle
import TokenServer

extension Exploration {
    /// The fence rounds of `sign-out-race` and `user-switch`: one user signs in; each round the
    /// token expires and every caller asks for a token while one more task ends the session at a
    /// point the schedule picks — a sign-out, or (`switching`) the other user's sign-in — and then
    /// asks for a token itself; once every task is done, one last call asks again. After a
    /// sign-out the user signs in again for the next round. Judged like the expiry storm: the
    /// contract's model over every call and sign-in (nothing of a session once its fence returned,
    /// I8; nothing of another user's, I9; a refresh that lands after the fence discarded), and the
    /// ledger.
    static func fenceRounds(
        _ descriptor: StoreDescriptor, _ scenario: Scenario, switching: Bool
    ) async -> (violations: [Violation], digest: ScheduleDigest, trace: StormTrace) {
        let world = ControlledWorld(
            descriptor, scenario, users: [Subject("explore-user"), Subject("explore-other-user")])
        let (time, server, store, log, users) = (world.time, world.server, world.store, world.log, world.users)
        guard await world.signIn() else { return world.judged(digested: false) }
        var signedIn = 0
        let fence = switching ? "user switch" : "sign-out"
        for round in 0..<scenario.rounds {
            time.advance(by: scenario.tokenLifetime)
            server.setContext("round \(round)")
            let next = switching ? 1 - signedIn : signedIn
            await withTaskGroup(of: Void.self) { group in
                for caller in 0..<scenario.tasks {
                    group.addTask {
                        _ = await log.call(.validToken, on: store, caller: caller, phase: "round \(round)")
                    }
                }
                group.addTask {
                    if switching {
                        try? await log.signIn(users[next], on: store)
                    } else {
                        await log.signOut(store)
                    }
                    _ = await log.call(
                        .validToken, on: store, caller: scenario.tasks, phase: "round \(round) after the \(fence)")
                }
            }
            _ = await log.call(
                .validToken, on: store, caller: scenario.tasks + 1, phase: "round \(round) after every call")
            signedIn = next
            guard !switching else { continue }
            server.setContext("round \(round) sign-in")
            do throws(SessionError) { try await log.signIn(users[0], on: store) } catch { break }
        }
        return world.judged()
    }
}

/// One schedule's world: virtual time, the healthy server every exploration runs against, the
/// store, the log of its calls and sign-ins, and the oracle that judges them.
struct ControlledWorld: Sendable {
    let time = ManualTime()
    let clock: TokenClock
    let server: TokenServer
    let skew: Duration
    /// Each account's store (one account but in `family`), made by the same descriptor.
    private(set) var stores: [any SessionStore]
    /// Each account's storage, for a store that keeps its session (`persistsSession`).
    let storages: [MemoryStorage?]
    /// The first account's store and users.
    var store: any SessionStore { stores[0] }
    let users: [Subject]
    let log: CallLog
    let oracle: Oracle
    /// The user the stores prompt for step-up, in a world that sells elevated tokens.
    let user: ExploringUser?
    let descriptor: StoreDescriptor
    /// The stores' processes, in a world that crashes (`crash-restart`).
    let lives: ProcessLives?

    init(
        _ descriptor: StoreDescriptor, _ scenario: Scenario, users: [Subject], stepUpLifetime: Duration? = nil,
        choices: ChoiceLog? = nil, crashes: Bool = false
    ) {
        self.init(
            descriptor, scenario, accounts: [users], stepUpLifetime: stepUpLifetime, choices: choices,
            crashes: crashes)
    }

    /// A world of several accounts, `accounts[k]` account k's users, each with a store of its own.
    /// With `stepUpLifetime`, the server sells elevated tokens that live that long, the refresh skew
    /// is sized to them (as `step-up`'s), and the stores prompt ``user``, whose answers are the
    /// schedule's choices, recorded in `choices`. With `crashes`, each store lives in a process
    /// of its own (``ProcessLife``) that ``restart()`` ends.
    init(
        _ descriptor: StoreDescriptor, _ scenario: Scenario, accounts: [[Subject]], stepUpLifetime: Duration? = nil,
        choices: ChoiceLog? = nil, crashes: Bool = false
    ) {
        self.descriptor = descriptor
        ControlledExecution.watch(time)
        lives = crashes ? ProcessLives() : nil
        clock = TokenClock.manual(time)
        server = Self.server(scenario, clock: clock, stepUpLifetime: stepUpLifetime)
        skew = min(Duration.seconds(1), (stepUpLifetime ?? scenario.tokenLifetime) / 4)
        log = CallLog(accounts: accounts, clock: clock, server: server)
        user = stepUpLifetime.map { [server, log, clock] _ in
            ExploringUser(server: server, log: log, clock: clock, users: accounts[0], choices: choices ?? ChoiceLog())
        }
        // A store that keeps its session gets a storage of its own, in memory, and the contract's
        // storage promises are judged over every write (persist before publish, cleared by a fence,
        // nothing of a session saved after it ended).
        storages = accounts.map { [server] _ in
            descriptor.persistsSession ? MemoryStorage(pairing: { server.issuedGeneration(of: $0) }) : nil
        }
        users = accounts[0]
        oracle = Oracle(scenario: scenario.name, seed: scenario.seed)
        stores = []
        stores = storages.map { makeStore(over: $0) }
    }

    /// A store over `storage`, in a new process when the world crashes.
    private func makeStore(over storage: MemoryStorage?) -> any SessionStore {
        var endpoint: any TokenEndpoint = server
        var kept: (any TokenStorage)? = storage
        if let life = lives?.next() {
            endpoint = ProcessLife.Endpoint(life: life, server: server)
            kept = storage.map { ProcessLife.Storage(life: life, base: $0) }
        }
        var configuration = SessionStoreConfiguration(endpoint: endpoint, clock: clock, refreshSkew: skew)
        configuration.storage = kept
        configuration.authenticator = user
        return descriptor.make(configuration)
    }

    /// The first account's process dies (``ProcessLife``): every refresh answer on its way is
    /// lost and the log stops judging the calls it cut; a new store is made over what it saved.
    func restart() -> any SessionStore {
        log.crashed(at: TokenServer.realNanoseconds())
        server.loseAnswersInFlight()
        lives?.crash()
        return makeStore(over: storages[0])
    }

    /// Signs each account's first user in on its store; `false` when a sign-in failed.
    func signIn() async -> Bool {
        server.setContext("sign-in")
        for (account, store) in stores.enumerated() {
            do throws(SessionError) {
                try await log.signIn(log.subjects[account][0], on: store, account: account)
            } catch {
                return false
            }
        }
        return true
    }

    /// What the schedule found: the ledger audited, and every call and sign-in judged against the
    /// contract's model — paced, since time here is the scheduler's and real time excuses no refusal
    /// of the store's own, and against a healthy server (a failed sign-in is the store's, I12)
    /// unless `healthyServer` is false (the flaky rounds' server fails on purpose).
    /// `digested`: with the digest of what was done (none for a schedule that could not start).
    /// `digestAlso`: what else the schedule did, in order, for the digest (what subscribers were told).
    func judged(
        digested: Bool = true, healthyServer: Bool = true, clockMoves: Bool = false, digestAlso: [String] = []
    ) -> (violations: [Violation], digest: Exploration.ScheduleDigest, trace: Exploration.StormTrace) {
        let (calls, entries) = (log.calls, server.ledger.entries)
        if digested {
            let handed = Set(calls.compactMap { $0.token?.generation })
            oracle.auditLedger(entries) { handed.contains($0) }
        }
        let coverage = log.judge(
            skew: skew, paced: true, healthyServer: healthyServer, clockMoves: clockMoves,
            storages: digested ? storages : [], controlled: true, into: oracle)
        return (
            oracle.violations,
            digested ? Exploration.ScheduleDigest(entries: entries, calls: calls, more: digestAlso) : .none,
            Exploration.StormTrace(calls: calls, entries: entries, coverage: coverage)
        )
    }

    /// The server every exploration runs against: healthy, in process, and every answer travels —
    /// a timer, so the scheduler may run anything while a request is on its way (with no latency a
    /// refresh of a store with no actor hop would be one step, and its races out of reach) — for 1 ms
    /// or, as the schedule picks, up to a minute more (``ControlledExecution/answer(after:)``), so a
    /// store's own timeout may fire before the answer. Token bytes play no part: short ones keep
    /// each schedule cheap.
    static func server(_ scenario: Scenario, clock: TokenClock, stepUpLifetime: Duration? = nil) -> TokenServer {
        var configuration = scenario.serverConfiguration
        if let stepUpLifetime { configuration.stepUpLifetime = stepUpLifetime }
        configuration.faults = .none
        configuration.latency = .fixed(.milliseconds(1))
        configuration.tokenSize = 16
        return TokenServer(configuration: configuration, clock: clock) { await ControlledExecution.answer(after: $0) }
    }
}
