#if PostgreSQL
import Foundation
import SessionContract
import SessionStoragePostgres
import Synchronization
import Testing

/// The database stops, or stops answering, while replicas run: the run's problem, never the
/// store's. The tool (or a storage) reaches the server through a relay the test cuts (every
/// connection closed, new ones refused) or freezes (nothing passes) and brings back, as such a
/// database looks to its clients.
extension ReplicaTests {
    /// A relay to the test server, and the URL that reaches the server through it.
    func relay() throws -> (relay: DatabaseRelay, url: String, direct: PostgresLocation) {
        let server = try #require(Self.server, "CI runs the replica tests: .ci/run starts PostgreSQL (scripts/postgres)")
        let direct = try PostgresLocation(url: server)
        let relay = try #require(DatabaseRelay(to: direct.host, port: direct.port), "no loopback port for the relay")
        var components = try #require(URLComponents(string: server))
        components.port = Int(relay.port)
        return (relay, try #require(components.string), direct)
    }

    @Test("the database stops mid-run: every run it touches ends in error, 'database unreachable', never hung or judged; the next run that reaches it removes the leftover row")
    func databaseStopsMidRun() async throws {
        let (relay, url, direct) = try relay()
        let folder = try ToolProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let output = folder.appendingPathComponent("results.json")
        let (pid, logs) = try ToolProcess.spawn(
            ["compare", "--stores", "mutex", "--scenario", "replicas", "--seed", "31", "--output", output.path],
            environment: [PostgresLocation.environmentVariable: url])
        defer { try? FileManager.default.removeItem(at: logs) }
        // The sweep, the driver's save and the four replicas' connections are in: the first run is
        // under way, its session saved. The database stops.
        #expect(await relay.waitForConnections(12), "the run never reached the database")
        relay.cut()
        let status = await Self.exitStatus(of: pid)
        let printed =
            ((try? String(contentsOf: logs.appendingPathComponent("stdout"), encoding: .utf8)) ?? "")
            + ((try? String(contentsOf: logs.appendingPathComponent("stderr"), encoding: .utf8)) ?? "")
        #expect(status == 1, "\(printed)")
        let results = (try? JSONDecoder().decode(CrashRestartTests.Rows<Result>.self, from: Data(contentsOf: output)).results) ?? []
        #expect(results.count == 2, "both backends reported: \(printed)")
        for result in results {
            #expect(result.verdict == "error", "\(result.scenario): \(result.verdict) \(result.failure ?? "")")
            #expect(result.failure?.hasPrefix("database unreachable: PostgreSQL at ") == true, "\(result.failure ?? "")")
            #expect(result.violations.isEmpty, "\(result.scenario): nothing is judged against the store")
        }
        #expect(!printed.contains("hung") && !printed.contains("not run"), "\(printed)")

        // The run could not remove its row, tokens and all.
        let mine = "session-bench-run-p\(pid)-"
        #expect(try PostgresTokenStorage.sessions(at: direct).contains { $0.contains(mine) }, "the row the stop left")
        // Beside it: a row of another run that is gone, one of a run still going (this test), and one
        // of another machine.
        let (gone, goneLogs) = try ToolProcess.spawn(["--version"])
        try? FileManager.default.removeItem(at: goneLogs)
        var ended: Int32 = 0
        waitpid(gone, &ended, 0)
        let ticks = try #require(LeftBehindTests.startTicks(getpid()))
        let planted = [
            PostgresBackends.sessionKey(for: "/tmp/session-bench-run-p\(gone)-t12345-Ab12Cd/session-bench-storage-Ef34Gh"),
            PostgresBackends.sessionKey(for: "/tmp/session-bench-run-p\(getpid())-t\(ticks)-Ab12Cd/session-bench-storage-Ef34Gh"),
            "another-machine:/tmp/session-bench-run-p\(gone)-t12345-Ab12Cd/session-bench-storage-Ef34Gh",
        ]
        for key in planted { _ = try PostgresTokenStorage(location: direct, session: key, coordination: .unlocked) }
        defer { try? PostgresTokenStorage.remove(sessions: planted, at: direct) }

        #expect(relay.resume(), "the relay could not listen on its port again")
        let next = try await ToolProcess.run(
            ["compare", "--stores", "mutex", "--scenario", "replicas:postgres-advisory-lock", "--rounds", "1", "--quiet"],
            environment: [PostgresLocation.environmentVariable: url], timeout: 180)
        // What is tested here is the clean-up, not the scenario's verdict: judged on a machine the
        // rest of the suite loads, a replica's wait past the lock's timeout can come out a
        // violation (exit 1). An error or a refusal (exit 2) is never right.
        #expect(next.status == 0 || next.status == 1, "\(next.stdout)\(next.stderr)")
        #expect(!next.stdout.contains("ERROR") && !next.stdout.contains("HUNG"), "\(next.stdout)")
        #expect(next.stderr.contains("removed ") && next.stderr.contains("stored session(s) of runs that ended"), "\(next.stderr)")
        let left = try PostgresTokenStorage.sessions(at: direct)
        #expect(!left.contains { $0.contains(mine) }, "the stopped run's row is gone")
        #expect(!left.contains(planted[0]), "the row of a run that is gone is removed")
        #expect(left.contains(planted[1]) && left.contains(planted[2]), "a live run's row and another machine's stay")
    }

    @Test("a storage whose database stops answering, or goes away, fails with .unreachable and never blocks")
    func storageAnswersUnreachable() async throws {
        let (relay, url, direct) = try relay()
        let relayed = try PostgresLocation(url: url)
        let session = "unreachable-\(UUID().uuidString)"
        defer { try? PostgresTokenStorage.remove(session: session, at: direct) }
        let storage = try PostgresTokenStorage(location: relayed, session: session, coordination: .rowLock)
        let grant = TokenGrant(
            accessToken: AccessToken(
                value: "at.outage-secret", subject: Subject("u"), generation: 1, expiresAt: TokenInstant(nanoseconds: 0)),
            refreshToken: RefreshToken("rt.outage-secret"))
        try storage.save(grant)
        /// `call` on a thread of its own (a call that blocked for good holds that thread, not the
        /// test): it must fail as unreachable.
        func expectUnreachable(_ name: String, _ call: @escaping @Sendable () throws(StorageError) -> Void) async {
            let outcome = await Self.offThread { () -> Swift.Result<Void, StorageError> in
                do throws(StorageError) { try call() } catch { return .failure(error) }
                return .success(())
            }
            switch outcome {
            case .failure(.unreachable(let why))?:
                #expect(why.hasPrefix("PostgreSQL at ") && !why.contains("outage-secret"), "\(name): \(why)")
            case .failure(let error)?: Issue.record("\(name): \(error), not unreachable")
            case .success?: Issue.record("\(name) succeeded with the database gone")
            case nil: Issue.record("\(name) blocked: no answer after a minute")
            }
        }
        // A server that stops answering: the call gives up after the storage's answer timeout.
        relay.freeze()
        await expectUnreachable("load from a silent server") { () throws(StorageError) in _ = try storage.load() }
        // One that is gone: at once.
        relay.cut()
        await expectUnreachable("save") { () throws(StorageError) in try storage.save(grant) }
        await expectUnreachable("a new storage") { () throws(StorageError) in
            _ = try PostgresTokenStorage(location: relayed, session: session, coordination: .rowLock)
        }
    }

    /// `work` on a thread of its own; `nil` if it has not returned after a minute (it blocked).
    static func offThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T? {
        let once = Once()
        return await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
            let finish: @Sendable (T?) -> Void = { value in
                if once.first() { continuation.resume(returning: value) }
            }
            Thread { finish(work()) }.start()
            Task {
                try? await Task.sleep(for: .seconds(60))
                finish(nil)
            }
        }
    }

    final class Once: Sendable {
        private let done = Atomic(false)
        /// `true` the first time only.
        func first() -> Bool { !done.exchange(true, ordering: .sequentiallyConsistent) }
    }

    /// The exit status of `pid`, reaped; killed past three minutes.
    static func exitStatus(of pid: pid_t) async -> Int32 {
        var status: Int32 = 0
        let deadline = ContinuousClock.now + .seconds(180)
        while waitpid(pid, &status, WNOHANG) == 0 {
            if ContinuousClock.now > deadline {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                Issue.record("compare ran past three minutes and was killed")
                break
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return status & 0x7f != 0 ? 128 + (status & 0x7f) : (status >> 8) & 0xff
    }
}
#endif
