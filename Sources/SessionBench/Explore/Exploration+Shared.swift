import SessionContract
import SessionOracle
import SessionSync
import TokenServer

extension Exploration {
    /// Store instances that share one saved session under `shared-storage`: two processes of two
    /// instances each, as the paced family runs them (here all in this process, each instance
    /// over a storage object of its own).
    static let sharedHolders = 4
    static let sharedInstancesPerProcess = 2

    /// The events of `shared-storage`: one saved session, ``sharedHolders`` store instances over
    /// it, each through a storage object of its own on one in-memory session with one refresh
    /// lock between them (``SharedMemoryStorage``: a file and its `flock`, a Keychain item and
    /// its app group). Each instance first reads the saved session; then events, four kinds in
    /// turn as the paced family has them — a 401 storm by every instance (each first reads the
    /// token it holds), an expiry for every instance, a 401 storm by one instance alone, an
    /// expiry for every instance but that one — each with `tasks` callers per instance, two events a
    /// round (a storm and an expiry: every kind in two rounds); then one
    /// instance signs out and the others report 401s for the tokens they hold. Which instance
    /// takes the lock first, when a save lands, when an answer arrives: the schedule's choices.
    /// Judged by ``SharedStorageJudge`` — one refresh per event across every instance (I1),
    /// every caller a token newer than its 401's or issued after the expiry, the storage holding
    /// the newest token any caller has (I15), the ended session gone for every holder and from
    /// the storage (I8, I16) — and the ledger (no refresh token presented twice, I7).
    static func sharedRounds(
        _ descriptor: StoreDescriptor, _ scenario: Scenario
    ) async -> (violations: [Violation], digest: ScheduleDigest, trace: StormTrace) {
        let time = ManualTime()
        ControlledExecution.watch(time)
        let clock = TokenClock.manual(time)
        let server = ControlledWorld.server(scenario, clock: clock)
        let user = Subject("explore-user")
        let log = CallLog(users: [user], clock: clock, server: server)
        let oracle = Oracle(scenario: scenario.name, seed: scenario.seed)
        let storage = SharedMemoryStorage(pairing: { server.issuedGeneration(of: $0) })
        server.setContext("sign-in")
        guard case .success(let grant) = await server.signInResult(Credentials(subject: user)) else {
            return (oracle.violations, .none, StormTrace())
        }
        try? storage.base.save(grant)
        let skew = min(Duration.seconds(1), scenario.tokenLifetime / 4)
        let stores = (0..<sharedHolders).map { _ in
            descriptor.make(
                SessionStoreConfiguration(
                    endpoint: server, clock: clock, refreshSkew: skew, storage: storage.holder()))
        }
        let names = stores.indices.map {
            "process \($0 / sharedInstancesPerProcess) instance \($0 % sharedInstancesPerProcess)"
        }
        let callers = max(1, scenario.tasks)
        var history = SharedStorageHistory(
            backend: "in-memory", holders: sharedHolders, processes: sharedHolders / sharedInstancesPerProcess,
            saved: grant.accessToken.generation, lockTimeout: nil)
        var handed: Set<UInt64> = [grant.accessToken.generation]

        /// Each of `holders` makes `request(holder)` from `count` callers at once.
        func calls(
            _ holders: [Int], count: Int, phase: String,
            _ request: @escaping @Sendable (Int) -> (StoreCall, OperationKind)?
        ) async -> [(holder: Int, result: Result<AccessToken, SessionError>)] {
            await withTaskGroup(of: (Int, Result<AccessToken, SessionError>).self) { group in
                for holder in holders {
                    // A holder whose read before a storm failed has no token to report a 401 for.
                    guard let (call, kind) = request(holder) else { continue }
                    for index in 0..<count {
                        let store = stores[holder]
                        let caller = holder * callers + index
                        group.addTask {
                            (holder, await log.call(call, on: store, caller: caller, kind: kind, phase: phase))
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append((holder: $1.0, result: $1.1)) }
            }
        }
        func answers(_ results: [(holder: Int, result: Result<AccessToken, SessionError>)])
            -> [SharedStorageHistory.Answer]
        {
            results.map { .init(instance: names[$0.holder], result: $0.result.map(\.generation)) }
        }
        /// What each holder's reading caller holds now: the token its 401s will be for; and the reads
        /// that failed, answers of the event like any other.
        func held(_ holders: [Int], phase: String) async -> (
            tokens: [Int: AccessToken], failed: [(holder: Int, result: Result<AccessToken, SessionError>)]
        ) {
            var tokens: [Int: AccessToken] = [:]
            var failed: [(holder: Int, result: Result<AccessToken, SessionError>)] = []
            for read in await calls(holders, count: 1, phase: phase, { _ in (.validToken, .read) }) {
                if case .success(let token) = read.result { tokens[read.holder] = token } else { failed.append(read) }
            }
            return (tokens, failed)
        }

        server.setContext("launch")
        let everyone = Array(stores.indices)
        let firsts = await calls(everyone, count: 1, phase: "launch") { _ in (.validToken, .read) }
        for process in 0..<(sharedHolders / sharedInstancesPerProcess) {
            let mine = firsts.filter { $0.holder / sharedInstancesPerProcess == process }.sorted {
                $0.holder < $1.holder
            }
            history.observations.append(.firsts(process: process, results: mine.map { $0.result.map(\.generation) }))
        }
        handed.formUnion(firsts.compactMap { try? $0.result.get().generation })

        for event in 0..<(2 * scenario.rounds) {
            let context = "event \(event)"
            let alone = (event / 4) % sharedHolders
            let (expiry, holders): (Bool, [Int]) =
                switch event % 4 {
                case 0: (false, everyone)
                case 1: (true, everyone)
                case 2: (false, [alone])
                default: (true, everyone.filter { $0 != alone })
                }
            let issuedBefore = server.ledger.entries.compactMap(\.issuedGeneration).max() ?? 0
            server.setContext(context)
            var (tokens, failedReads):
                ([Int: AccessToken], [(holder: Int, result: Result<AccessToken, SessionError>)]) = ([:], [])
            if !expiry {
                (tokens, failedReads) = await held(holders, phase: "\(context) reads")
                handed.formUnion(tokens.values.map(\.generation))
            } else {
                time.advance(by: scenario.tokenLifetime + .seconds(1))
            }
            let rejected = tokens
            let results =
                await calls(holders, count: callers, phase: context) { holder in
                    expiry ? (.validToken, .refreshWait) : rejected[holder].map { (.tokenRejected($0), .rejection) }
                } + failedReads
            handed.formUnion(results.compactMap { try? $0.result.get().generation })
            let heldGenerations = Dictionary(uniqueKeysWithValues: tokens.map { (names[$0.key], $0.value.generation) })
            history.observations.append(
                .event(
                    .init(
                        index: event, expiry: expiry, holders: holders.count, issuedBefore: issuedBefore,
                        held: heldGenerations),
                    answers: answers(results), ledger: server.ledger.entries))
            history.observations.append(
                .storage(after: context, held: storage.state, newest: handed.max() ?? 0))
        }

        // One instance signs out; the others' 401s for the tokens they hold must find the session over.
        server.setContext("sign-out")
        await log.signOut(stores[0])
        server.setContext("after sign-out")
        let others = Array(everyone.dropFirst())
        // (A read that finds the session over already is right: only the 401s are judged.)
        let (tokens, _) = await held(others, phase: "after sign-out reads")
        let after = await calls(others, count: callers, phase: "after sign-out") { holder in
            tokens[holder].map { (.tokenRejected($0), .rejection) }
        }
        history.observations.append(
            .afterSignOut(answers: answers(after), ledger: server.ledger.entries, held: storage.state))

        oracle.record(SharedStorageJudge.judge(history).findings)
        let (loggedCalls, entries) = (log.calls, server.ledger.entries)
        let seen = handed.union(loggedCalls.compactMap { $0.token?.generation })
        oracle.auditLedger(entries) { seen.contains($0) }
        return (
            oracle.violations, ScheduleDigest(entries: entries, calls: loggedCalls),
            StormTrace(calls: loggedCalls, entries: entries)
        )
    }
}

/// One saved session that several store instances share in this process, each through a storage
/// object of its own (``holder()``), with one refresh lock between them: what a session file and
/// its `flock` are to instances in several processes. The lock parks tasks, so which holder takes
/// it first is the schedule's choice.
final class SharedMemoryStorage: Sendable {
    let base: MemoryStorage
    let turns = Turnstile()

    init(pairing: @escaping @Sendable (RefreshToken) -> UInt64?) { base = MemoryStorage(pairing: pairing) }

    /// A storage object of its own for one more holder.
    func holder() -> any SharedTokenStorage { Holder(shared: self) }

    /// What the session holds now.
    var state: StoredState { base.contents.saved.map { .session(generation: $0) } ?? .empty }

    private final class Holder: SharedTokenStorage {
        let shared: SharedMemoryStorage

        init(shared: SharedMemoryStorage) { self.shared = shared }

        func load() throws(StorageError) -> TokenGrant? { try shared.base.load() }
        func save(_ grant: TokenGrant) throws(StorageError) { try shared.base.save(grant) }
        func clear() throws(StorageError) { try shared.base.clear() }

        func whileRefreshing<R>(_ body: () async -> R) async throws(StorageError) -> R {
            await shared.turns.run(body)
        }
    }
}
