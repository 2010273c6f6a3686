import Foundation
import SessionBench
import SessionMeasurement
import Testing

/// The `session-bench` executable, run as a user runs it.
// The limit bounds a hang, not a speed (see ``InProcessTurn``); each run of the tool is killed
// past its own timeout (``ToolProcess``).
@Suite("Command line", .tags(.slow), .skippedInQuickRun, .serialized, .timeLimit(.minutes(30)))
struct CommandLineTests {
    typealias Run = ToolProcess.Run

    static var executable: URL { ToolProcess.executable }

    func run(_ arguments: [String], environment: [String: String] = [:], timeout: Double = 120) async throws -> Run {
        try await ToolProcess.run(arguments, environment: environment, timeout: timeout)
    }

    static let quick = ["--rounds", "3", "--tasks", "8", "--duration", "50ms", "--quiet"]

    func temporaryDirectory() throws -> URL { try ToolProcess.temporaryDirectory() }

    @Test func executableIsBuilt() {
        #expect(FileManager.default.isExecutableFile(atPath: Self.executable.path), "\(Self.executable.path)")
    }

    @Test func listMarksTheBrokenStore() async throws {
        let run = try await run(["list"])
        #expect(run.status == 0)
        let naive = run.stdout.split(separator: "\n").first { $0.contains("actor-naive") }
        #expect(naive?.contains("reference-broken") == true)
        #expect(run.stdout.contains("expiry-storm"))
    }

    @Test("--include-broken shows the seed ADR actor violating single-flight, exit 1")
    func brokenStoreFails() async throws {
        let run = try await run(["compare", "--stores", "actor-naive,mutex", "--include-broken", "--scenario", "expiry-storm"] + Self.quick)
        #expect(run.status == 1)
        #expect(run.stdout.contains("I1 single-flight"))
        let mutexRow = run.stdout.split(separator: "\n").first { $0.hasPrefix("mutex ") }
        #expect(mutexRow?.contains("pass") == true)
    }

    @Test("CSV output matches the header documented in docs/csv.md")
    func csvHeader() async throws {
        let directory = try temporaryDirectory()
        let file = directory.appendingPathComponent("f.csv")
        let run = try await run(["compare", "--stores", "mutex", "--scenario", "steady-reads,expiry-storm", "--format", "csv", "--output", file.path] + Self.quick)
        #expect(run.status == 0, "\(run.stderr)")
        let csv = try String(contentsOf: file, encoding: .utf8)
        let lines = csv.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        let header = ResultsReport.csvColumns.joined(separator: ",")
        #expect(lines.first == header)
        #expect(lines.count >= 3)
        #expect(lines.dropFirst().allSatisfy { $0.split(separator: ",", omittingEmptySubsequences: false).count == ResultsReport.csvColumns.count })
        let page = try String(contentsOf: Self.packageRoot.appendingPathComponent("docs/csv.md"), encoding: .utf8)
        #expect(page.contains(header), "docs/csv.md documents the header the tool writes")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(leftovers == ["f.csv"], "no temporary file left beside the output")
    }

    @Test("compare shows the synchronous read path beside the async one, in the table and as CSV rows")
    func syncReadRows() async throws {
        let directory = try temporaryDirectory()
        let csv = directory.appendingPathComponent("f.csv").path
        let run = try await run(["compare", "--stores", "mutex,actor-task", "--scenario", "steady-reads", "--output", csv] + Self.quick)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("steady-reads · sync-read — currentToken() on 8 OS threads at once"), "\(run.stdout)")
        let rows = try String(contentsOfFile: csv, encoding: .utf8).components(separatedBy: "\r\n").filter { !$0.isEmpty }
        let columns = ResultsReport.csvColumns
        let operation = try #require(columns.firstIndex(of: "operation"))
        let sync = rows.dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
            .filter { $0[operation] == "sync-read" }
        #expect(sync.count == 1 && sync.first?[1] == "mutex", "one sync-read row, for the store that has the path: \(sync)")
        if let row = sync.first {
            for name in ["plain_load_ops_per_s", "caller_min_ops_per_s", "sync_threads", "throughput_ops_per_s"] {
                let index = try #require(columns.firstIndex(of: name))
                #expect(Double(row[index]).map { $0 > 0 } == true, "\(name) = \(row[index])")
            }
        }
    }

    @Test("--sync-threads sets the synchronous readers apart from --tasks; 0 skips them; out of range is exit 2")
    func syncThreads() async throws {
        let three = try await run(
            ["compare", "--stores", "mutex", "--scenario", "steady-reads", "--sync-threads", "3", "--format", "csv", "--output", "-"]
                + Self.quick)
        #expect(three.status == 0, "\(three.stderr)")
        let columns = ResultsReport.csvColumns
        let operation = try #require(columns.firstIndex(of: "operation"))
        let threads = try #require(columns.firstIndex(of: "sync_threads"))
        let rows = three.stdout.components(separatedBy: "\r\n").dropFirst().filter { !$0.isEmpty }
            .map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        let sync = rows.filter { $0[operation] == "sync-read" }
        #expect(sync.map { $0[threads] } == ["3"], "one sync-read row, on 3 threads while 8 callers ran: \(sync)")

        let none = try await run(
            ["compare", "--stores", "mutex", "--scenario", "steady-reads", "--sync-threads", "0", "--format", "csv", "--output", "-"]
                + Self.quick)
        #expect(none.status == 0, "\(none.stderr)")
        let operations = none.stdout.components(separatedBy: "\r\n").dropFirst().filter { !$0.isEmpty }
            .map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init)[operation] }
        #expect(!operations.isEmpty && !operations.contains("sync-read"), "\(operations)")

        let tooMany = try await run(["compare", "--stores", "mutex", "--scenario", "steady-reads", "--sync-threads", "257"])
        #expect(tooMany.status == 2)
        #expect(tooMany.stderr.contains("between 0 and 256"), "\(tooMany.stderr)")
        #expect(tooMany.stderr.split(separator: "\n").count == 1, "one line: \(tooMany.stderr)")
    }

    @Test("writes-under-reads shows the writer's wait under async and synchronous readers, and the readers' rate")
    func writesUnderReads() async throws {
        let csv = try await run(
            // Long enough for the writer to be given a turn on a busy machine.
            ["compare", "--stores", "mutex,actor-task", "--scenario", "writes-under-reads", "--format", "csv", "--output", "-",
             "--tasks", "8", "--duration", "300ms", "--quiet"])
        #expect(csv.status == 0, "\(csv.stderr)")
        let columns = ResultsReport.csvColumns
        let index = { (name: String) in columns.firstIndex(of: name)! }
        let rows = csv.stdout.components(separatedBy: "\r\n").dropFirst().filter { !$0.isEmpty }
            .map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        let kinds = Set(rows.map { "\($0[index("store")]) \($0[index("operation")])" })
        #expect(kinds.isSuperset(of: ["mutex rejection", "mutex sync-write", "actor-task rejection"]), "\(kinds)")
        #expect(!kinds.contains("actor-task sync-write"), "no synchronous readers, no write under them")
        for row in rows where ["rejection", "sync-write"].contains(row[index("operation")]) {
            #expect((Int(row[index("samples")]) ?? 0) > 0 && (Double(row[index("p99_ns")]) ?? 0) > 0, "\(row)")
            #expect((Double(row[index("throughput_ops_per_s")]) ?? 0) > 0, "the readers' rate while writing: \(row)")
        }
        let mutex = { (operation: String) in
            rows.first { $0[index("store")] == "mutex" && $0[index("operation")] == operation }?[index("throughput_ops_per_s")]
        }
        #expect(mutex("sync-write") == mutex("sync-read"), "under the threads, the threads' rate")
        #expect(mutex("rejection") == mutex("read"), "under the async callers, theirs")
        let table = try await run(["compare", "--stores", "mutex", "--scenario", "writes-under-reads"] + Self.quick)
        #expect(table.stdout.contains("writes-under-reads · writer"), "\(table.stdout)")
    }

    @Test("--cpus pins the measuring processes, and every result records where it ran")
    func pinned() async throws {
        let directory = try temporaryDirectory()
        let csv = directory.appendingPathComponent("f.csv").path
        let run = try await run(["compare", "--stores", "mutex", "--scenario", "steady-reads", "--cpus", "0", "--output", csv] + Self.quick)
        #expect(run.status == 0, "\(run.stderr)")
        let rows = try String(contentsOfFile: csv, encoding: .utf8).components(separatedBy: "\r\n").filter { !$0.isEmpty }
        let cpus = try #require(ResultsReport.csvColumns.firstIndex(of: "cpus"))
        let values = Set(rows.dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false)[cpus] })
        #expect(values == ["0"], "every row ran on CPU 0 alone: \(values)")
    }

    @Test("JSON carries histograms and never a token or user id")
    func jsonHasEverythingButSecrets() async throws {
        let run = try await run(["compare", "--stores", "mutex", "--scenario", "user-switch,steady-reads", "--format", "json"] + Self.quick)
        #expect(run.status == 0, "\(run.stderr)\(run.stdout.suffix(2_000))")
        let report = try JSONDecoder().decode(ResultsReport.self, from: Data(run.stdout.utf8))
        #expect(report.results.count == 2)
        #expect(report.results.allSatisfy { !$0.latencies.isEmpty && !$0.latencies[0].distribution.isEmpty })
        #expect(!run.stdout.contains("eyJ"), "no access token value")
        #expect(!run.stdout.contains("account-0"), "no user id")
    }

    @Test(
        "bad input: one line naming the problem, exit 2, no file",
        arguments: [
            (["--stores", "nosuchstore"], "unknown store 'nosuchstore'"),
            (["--scenario", "nosuchscenario"], "unknown scenario 'nosuchscenario'"),
            (["--tasks", "abc"], "abc"),
            (["--tasks", "0"], "--tasks"),
            (["--duration", "fast"], "fast"),
            (["--format", "xml"], "xml"),
            (["--output", "/nonexistent-dir/f.csv"], "does not exist"),
            (["--output", "/proc/f.csv"], "cannot create files"),
            (["--cpus", "4096"], "--cpus"),
            (["--cpus", "0-"], "is not a CPU number or range"),
            (["--cpus", "\(ProcessInfo.processInfo.activeProcessorCount + 7)"], "is not one this process may use"),
        ])
    func badInput(_ arguments: [String], _ mention: String) async throws {
        let run = try await run(["compare", "--format", "csv"] + arguments)
        #expect(run.status == 2)
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 1, "one line: \(run.stderr)")
        #expect(run.stderr.contains(mention))
        #expect(run.stdout.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: "/nonexistent-dir/f.csv"))
    }

    @Test("an unwritable output leaves no file and runs nothing")
    func unwritableOutput() async throws {
        let directory = try temporaryDirectory()
        chmod(directory.path, 0o500)
        defer { chmod(directory.path, 0o700) }
        let target = directory.appendingPathComponent("f.csv").path
        let run = try await run(["compare", "--output", target, "--stores", "mutex"] + Self.quick)
        // Root ignores directory permissions; then the write simply succeeds.
        if getuid() != 0 {
            #expect(run.status == 2)
            #expect(!FileManager.default.fileExists(atPath: target))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).allSatisfy { !$0.hasSuffix(".tmp") })
    }

    @Test("a store that crashes or hangs becomes a verdict; the others still run")
    func isolation() async throws {
        let run = try await run(
            ["compare", "--stores", "crashes-on-expiry,hangs-on-expiry,mutex", "--scenario", "expiry-storm", "--hang-timeout", "1"] + Self.quick,
            environment: ["SESSION_BENCH_SELF_TEST_STORES": "1"])
        #expect(run.status == 1)
        let rows = run.stdout.split(separator: "\n")
        #expect(rows.first { $0.hasPrefix("crashes-on-expiry") }?.contains("CRASHED") == true, "\(run.stdout)")
        #expect(rows.first { $0.hasPrefix("hangs-on-expiry") }?.contains("HUNG") == true, "\(run.stdout)")
        #expect(rows.first { $0.hasPrefix("mutex") }?.contains("pass") == true)
        #expect(run.stdout.contains("stuck in refresh-wait"))
        // The crash names the trap and where it happened.
        #expect(run.stdout.contains("SelfTestStores.swift:") && run.stdout.contains("Fatal error: self-test store crashing on purpose"), "\(run.stdout)")
    }

    @Test("a store that blocks every pool thread is reported hung within the hang timeout; later scenarios say not run")
    func poolStarvation() async throws {
        let started = Date()
        let run = try await run(
            ["compare", "--stores", "semaphore-refresh,mutex", "--include-broken", "--scenario", "expiry-storm,401-storm",
             "--hang-timeout", "2", "--format", "json"] + Self.quick,
            environment: ["SESSION_BENCH_SELF_TEST_STORES": "1"], timeout: 60)
        let elapsed = Date().timeIntervalSince(started)
        #expect(run.status == 1)
        let report = try JSONDecoder().decode(ResultsReport.self, from: Data(run.stdout.utf8))
        let stuck = try #require(report.results.first { $0.store == "semaphore-refresh" && $0.scenario == "expiry-storm" })
        #expect(stuck.verdict == .hung)
        let hang = try #require(stuck.hang)
        #expect(hang.stuckCallers > 0, "never '0 stuck'")
        #expect(hang.detail?.contains("cooperative pool is blocked") == true, "\(hang.detail ?? "")")
        #expect(report.results.first { $0.store == "semaphore-refresh" && $0.scenario == "401-storm" }?.verdict == .notRun)
        #expect(report.results.filter { $0.store == "mutex" }.allSatisfy { $0.verdict == .pass })
        // The bound is for "not after minutes": a sanitized build beside a compile took 21.5 s.
        #expect(elapsed < 40, "the hang is reported within the hang timeout and a grace, not after minutes (\(elapsed)s)")
    }

    @Test("stress: randomized schedules pass for a correct store; a failure names the seed that reproduces it")
    func stress() async throws {
        let passing = try await run(["stress", "--stores", "mutex", "--scenario", "expiry-storm,user-switch", "--iterations", "2", "--seed", "5", "--quiet"])
        #expect(passing.status == 0, "\(passing.stderr)")
        let failing = try await run(["stress", "--stores", "actor-naive", "--include-broken", "--scenario", "expiry-storm", "--iterations", "2", "--seed", "9"])
        #expect(failing.status == 1)
        #expect(failing.stdout.contains("I1 single-flight"))
        // The command it prints runs that store × scenario again, with the same verdict.
        let line = try #require(failing.stderr.split(separator: "\n").first { $0.contains("reproduce with: ") }, "\(failing.stderr)")
        let command = line.components(separatedBy: "reproduce with: ")[1].split(separator: " ").map(String.init)
        #expect(command.first == "session-bench")
        #expect(command.contains("--seed") && command.contains("9") && command.contains("--include-broken"))
        let again = try await run(Array(command.dropFirst()) + ["--quiet"])
        #expect(again.status == 1)
        #expect(again.stdout.contains("I1 single-flight"), "\(again.stdout)")
    }

    @Test("stress --for runs until the time is up and says how many seeds it ran")
    func stressForDuration() async throws {
        let started = Date()
        let run = try await run(["stress", "--stores", "mutex", "--scenario", "expiry-storm", "--rounds", "5", "--tasks", "8", "--for", "3s", "--seed", "3"])
        let elapsed = Date().timeIntervalSince(started)
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try #require(run.stderr.split(separator: "\n").last { $0.hasPrefix("stress: ") && $0.contains("iteration(s)") })
        let iterations = Int(summary.dropFirst("stress: ".count).prefix { $0.isNumber }) ?? 0
        #expect(iterations >= 1 && summary.contains("seeds 3"), "\(summary)")
        #expect(elapsed >= 3, "goes on until the time is up, not for a fixed count (\(elapsed)s, \(iterations) iterations)")
        #expect(elapsed < 30, "stops soon after the time is up (\(elapsed)s)")
    }

    @Test func helpDocumentsExitStatus() async throws {
        let run = try await run(["compare", "--help"])
        #expect(run.status == 0)
        #expect(run.stdout.contains("Exit status: 0"))
    }

    static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }
}
