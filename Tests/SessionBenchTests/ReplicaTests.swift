import Foundation
import SessionBench
import SessionContract
import SessionOracle
import SessionStores
import Testing
import TokenServer

#if PostgreSQL
    import SessionStoragePostgres
#endif

/// `replicas`: replica processes sharing one session through PostgreSQL. They need the PostgreSQL
/// trait (a build with `--disable-default-traits`, as the ThreadSanitizer run's, has no server
/// backends) and a server: `SESSION_BENCH_POSTGRES_URL` names it (`scripts/postgres start` runs
/// one on loopback and prints its URL; CI does). Without one they are skipped, saying so — except
/// in CI, where a skipped replica test would hide a missing install step.
@Suite(
    "Replicas through PostgreSQL", .tags(.slow), .skippedInQuickRun, .serialized, .timeLimit(.minutes(30)),
    .enabled(
        if: PostgresForTests.built && (PostgresForTests.url != nil || PostgresForTests.inCI),
        "needs the PostgreSQL trait and SESSION_BENCH_POSTGRES_URL (scripts/postgres start)"))
struct ReplicaTests {
    static var server: String? { PostgresForTests.url }

    struct Result: MachineJudgedRow {
        let store: String
        let scenario: String
        let verdict: String
        let violations: [CrashRestartTests.Violation]
        let persistence: PersistenceFigures?
        let storms: Int
        let stormRefreshCalls: Int
        let failure: String?
    }

    func compare(_ arguments: [String]) async throws -> (status: Int32, results: [Result], printed: String) {
        try #require(Self.server != nil, "CI runs the replica tests: .ci/run starts PostgreSQL (scripts/postgres)")
        return try await CrashRestartTests.compare(arguments, as: Result.self)
    }

    @Test(
        "across 4 replicas, each correct backend: one refresh per event, no database call in reads, a dead lock holder")
    func correctBackendsPass() async throws {
        try #require(Self.server != nil, "CI runs the replica tests: .ci/run starts PostgreSQL (scripts/postgres)")
        // A database a loaded machine kept from answering in time is the machine's error, not a
        // verdict: that store × backend runs again.
        let (status, results, printed) = try await CrashRestartTests.compareRetryingMachineErrors(
            [
                "--stores", "mutex,lock-free-read", "--scenario", "replicas",
            ], as: Result.self)
        #expect(status == 0, "\(printed)")
        #expect(
            Set(results.map(\.scenario)) == ["replicas:postgres-advisory-lock", "replicas:postgres-row-lock"],
            "every correct server backend, no folder backend")
        #expect(results.count == 4)
        for result in results {
            #expect(
                result.verdict == "pass",
                "\(result.store) × \(result.scenario): \(result.violations) \(result.failure ?? "")")
            // 16 events, the expiry after the crash and the one with a stalled holder, each exactly one
            // refresh across all replicas.
            #expect(result.storms == 18 && result.stormRefreshCalls == 18, "\(result.scenario)")
            let figures = try #require(result.persistence)
            #expect(figures.processes == 4 && figures.holders == 4)
            // Per four events: 3 replicas take the grant, 3, none (one alone), 2; after the crash, 2 of 3.
            // Events whose lock waiters gave up on a crowded machine are not counted, and say so.
            #expect(figures.grantsTaken + (figures.grantsNotCounted ?? 0) == 4 * (3 + 3 + 0 + 2) + 2)
            #expect((figures.crowdedEvents ?? 0) <= 8, "most events judged, or the run is an error")
            #expect(figures.readsChecked == 4 * 16 * 2_000 && figures.storageCallsDuringReads == 0)
            // Measured, both figures; how long is too long is the driver's judgement (it passed),
            // made only when the machine let the replicas run (a loaded one makes any wait longer).
            #expect(figures.lockHolderRecoverySeconds != nil, "a dead holder's lock goes with its connection")
            let timeout = try #require(figures.lockTimeoutSeconds)
            // A stalled holder keeps its lock: the others wait out the timeout (2.004–2.008 s measured
            // on an idle machine), never less.
            let waited = try #require(figures.stalledHolderWaitSeconds)
            #expect(waited >= timeout)
        }
        #expect(!printed.contains("shared-storage-1-user"), "the user id is never printed")
    }

    @Test(
        "check-then-refresh with no lock, and a lock whose waiters go ahead after its timeout, fail single-flight and no-reuse",
        arguments: ["postgres-unlocked", "postgres-lock-then-proceed"])
    func brokenBackendsFail(backend: String) async throws {
        // A database that a loaded machine kept from answering in time ends the run in `error`,
        // the machine's, not a verdict on the store: that run is made again (three tries at most).
        var attempt = try await compare([
            "--stores", "mutex", "--scenario", "replicas:\(backend)", "--replicas", "3",
        ])
        for _ in 0..<2
        where attempt.results.first.map({ $0.verdict == "error" && ($0.failure ?? "").contains("unreachable") }) == true
        {
            attempt = try await compare(["--stores", "mutex", "--scenario", "replicas:\(backend)", "--replicas", "3"])
        }
        let (status, results, printed) = attempt
        #expect(status == 1, "\(printed)")
        let result = try #require(results.first)
        let found = Set(result.violations.map(\.invariant))
        #expect(found.isSuperset(of: [1, 7]), "\(printed)")
        #expect(result.persistence?.processes == 3)
    }

    #if PostgreSQL
        @Test(
            "a replica learns of a grant another saved through NOTIFY: no turn, no server call, no polling of its own")
        func announcedGrantIsTaken() async throws {
            let location = try PostgresLocation(url: try #require(Self.server))
            let time = ManualTime()
            let server = TokenServer(configuration: .init(tokenLifetime: .seconds(60)), clock: .manual(time))
            let session = "announce-\(UUID().uuidString)"
            let first = try await server.signIn(Credentials(subject: Subject("u")))
            var stores: [any SynchronousTokenReading] = []
            var storages: [PostgresTokenStorage] = []
            for _ in 0..<2 {
                let storage = try PostgresTokenStorage(
                    location: location, session: session, coordination: .advisoryLock)
                try storage.save(first)
                storages.append(storage)
                let store = StoreCatalog.named("mutex")!.make(
                    SessionStoreConfiguration(endpoint: server, clock: .manual(time), storage: storage))
                stores.append(try #require(store as? any SynchronousTokenReading))
            }
            defer { try? storages[0].clear() }
            // Both hold generation 1, and both listeners are in place before the grant is saved.
            for store in stores { #expect(try await store.validToken().generation == 1) }
            for _ in 0..<3000 where !storages.allSatisfy(\.isListening) { try await Task.sleep(for: .milliseconds(10)) }
            let listening = storages.allSatisfy(\.isListening)
            #expect(listening, "both replicas listen within 30 s")
            let renewed = try await stores[0].tokenRejected(first.accessToken)
            #expect(renewed.generation == 2)
            var seen: UInt64?
            for _ in 0..<200 {
                seen = stores[1].currentToken()?.generation
                if seen == 2 { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(seen == 2, "the other replica took the announced grant")
            #expect(server.ledger.entries.filter { $0.call == .refresh }.count == 1)
            // Its 401 for the old token is answered from memory: no refresh.
            #expect(try await stores[1].tokenRejected(first.accessToken).generation == 2)
            #expect(server.ledger.entries.filter { $0.call == .refresh }.count == 1)
        }
    #endif

    @Test("a folder backend is refused for replicas, a server backend for crash-restart")
    func backendKinds() async throws {
        let replicas = try await ToolProcess.run(
            ["compare", "--stores", "mutex", "--scenario", "replicas:json-file"], timeout: 60)
        #expect(replicas.status == 2)
        #expect(replicas.stderr.contains("replicas share a session through a database server"), "\(replicas.stderr)")
        let crashes = try await ToolProcess.run(
            ["compare", "--stores", "mutex", "--scenario", "crash-restart:postgres-row-lock"], timeout: 60)
        #expect(crashes.status == 2)
        #expect(crashes.stderr.contains("crash-restart runs over a backend in a folder"), "\(crashes.stderr)")
    }
}

#if PostgreSQL
    @Suite("PostgreSQL URLs")
    struct PostgresLocationTests {
        @Test("a URL gives host, port, user and database; its text never holds the password")
        func parses() throws {
            let location = try PostgresLocation(url: "postgres://bench:s3cret@127.0.0.1:54329/tokens")
            #expect(location.host == "127.0.0.1" && location.port == 54329)
            #expect(location.username == "bench" && location.database == "tokens")
            #expect(!location.description.contains("s3cret"))
            #expect(try PostgresLocation(url: "postgresql://bench@db/tokens").port == 5432)
        }

        @Test(
            "what is wrong with a URL is said in one line, never quoting the password",
            arguments: [
                ("http://bench@127.0.0.1/tokens", "not a postgres:// URL"),
                ("postgres://127.0.0.1/tokens", "names no user"),
                ("postgres://bench:s3cret@127.0.0.1", "names no database"),
                ("postgres://bench:s3cret@127.0.0.1/tokens?sslmode=require", "parameters are not supported"),
            ])
        func refuses(url: String, expected: String) {
            #expect {
                try PostgresLocation(url: url)
            } throws: { error in
                let text = "\(error)"
                return text.contains(expected) && !text.contains("s3cret") && !text.contains("\n")
            }
        }
    }
#endif

/// The server the replica tests use, if the environment names one.
enum PostgresForTests {
    #if PostgreSQL
        static let built = true
    #else
        static let built = false
    #endif
    static let url = ProcessInfo.processInfo.environment["SESSION_BENCH_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    static let inCI = ProcessInfo.processInfo.environment["CI"] == "true"
}
