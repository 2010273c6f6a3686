import Foundation
import SessionBench
import SessionMeasurement
import SessionOracle
import Testing

/// A store whose only findings are known — declared by the store, or named in an expectations
/// file — passes: one definition (``ScenarioResult/Verdict/passes``) that every command, the
/// gate, the exports and the baselines ask.
@Suite("Known is a pass in every command", .tags(.slow), .skippedInQuickRun, .serialized, .timeLimit(.minutes(30)))
struct KnownPassesTests {
    let cli = CommandLineTests()
    static let selfTest = ["SESSION_BENCH_SELF_TEST_STORES": "1"]
    /// The self-test store that refreshes on every 401 and declares it, in the 401 storm.
    static let declared = ["--stores", "declares-401-refresh", "--scenario", "401-storm", "--include-broken"]
    static let small = ["--rounds", "3", "--tasks", "8", "--quiet"]

    /// What the store's run found: its I6, known, and nothing else.
    func expectKnownOnly(_ stdout: String, _ run: ToolProcess.Run) throws {
        let report = try JSONDecoder().decode(ResultsReport.self, from: Data(stdout.utf8))
        #expect(!report.results.isEmpty)
        for result in report.results {
            #expect(result.verdict == .known, "\(ResultsReport.verdictText(result)) — \(run.stderr)")
            #expect(result.known?.map(\.invariant) == [.staleRejectionDoesNotRefresh])
        }
    }

    @Test("compare: exit 0, the run known")
    func compare() async throws {
        let run = try await cli.run(["compare"] + Self.declared + Self.small + ["--format", "json"], environment: Self.selfTest)
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        try expectKnownOnly(run.stdout, run)
    }

    @Test("stress: exit 0, the iterations known")
    func stress() async throws {
        let run = try await cli.run(
            ["stress", "--iterations", "2", "--seed", "5"] + Self.declared + Self.small + ["--format", "json"],
            environment: Self.selfTest)
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        try expectKnownOnly(run.stdout, run)
    }

    @Test("sweep: exit 0, every point known")
    func sweep() async throws {
        let run = try await cli.run(
            ["sweep", "--parameter", "tasks", "--values", "4,8", "--repeats", "1"] + Self.declared
                + ["--rounds", "3", "--quiet", "--format", "json"],
            environment: Self.selfTest)
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        try expectKnownOnly(run.stdout, run)
    }

    @Test("check: the invariants line passes, exit 0")
    func check() async throws {
        let path = try cli.temporaryDirectory().appendingPathComponent("thresholds.json").path
        try Data(
            #"""
            { "version": 1, "run": { "stores": ["declares-401-refresh"], "scenarios": ["401-storm"], "rounds": 3, "tasks": 8 },
              "limits": [ { "metric": "refresh_calls", "store": "declares-401-refresh", "scenario": "401-storm", "min": 1 } ] }
            """#.utf8
        ).write(to: URL(fileURLWithPath: path))
        let run = try await cli.run(["check", "--thresholds", path, "--quiet", "--format", "json"], environment: Self.selfTest)
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let outcomes = try JSONDecoder().decode([CheckOutcome].self, from: Data(run.stdout.utf8))
        let invariants = try #require(outcomes.first { $0.source == "invariants" })
        #expect(invariants.passed && invariants.measured.contains("every one expected"), "\(invariants)")
    }
}

/// The same rule where results are read rather than run: the gate, the benchmark exports and
/// the baselines on results written by hand.
@Suite("Known is a pass where results are read")
struct KnownResultsTests {
    /// A steady run of 1,000 reads of about 100 ns each, with `verdict`.
    static func result(_ verdict: ScenarioResult.Verdict) throws -> ScenarioResult {
        var result = ScenarioResult(store: "says-so", scenario: try ScenarioCatalog.named("steady-reads"), verdict: verdict)
        var recorder = LatencyRecorder()
        for call in 0..<1_000 { recorder.record(.read, nanoseconds: 100 + Int64(call % 3)) }
        result.latencies = recorder.summaries
        result.operations = 1_000
        result.seconds = 1e-4
        return result
    }

    @Test("the gate's invariants check passes a known run and fails a violated one")
    func gate() throws {
        for (verdict, passes) in [(ScenarioResult.Verdict.known, true), (.pass, true), (.violated, false)] {
            let outcomes = ThresholdCheck(thresholds: Thresholds(limits: []), results: [try Self.result(verdict)]).evaluate()
            #expect(outcomes.first?.passed == passes, "\(verdict)")
        }
    }

    @Test("a group of known and passing repeats is known, and passes; the exports keep its figures")
    func groups() throws {
        let known = try Self.result(.known)
        var second = try Self.result(.pass)
        second.repeatIndex = 1
        var first = known
        first.repeatIndex = 0
        let group = BenchmarkGroup.grouping([first, second])[0]
        #expect(group.verdict == .known)
        #expect(group.verdict.passes)
        #expect(!group.samples.isEmpty, "a known run's figures are the store's")
        let report = ResultsReport(results: [first, second], metadata: .current(command: "compare"))
        #expect(try report.bencherMetrics().contains("says-so/steady-reads"))
    }
}
