import Foundation
import SessionContract
import SessionBench
import Testing

/// `session-bench check`: exit 1 for the right reasons, exit 2 for a bad file.
@Suite("Thresholds gate", .tags(.slow), .skippedInQuickRun, .serialized, .timeLimit(.minutes(30)))
struct GateTests {
    let cli = CommandLineTests()

    func thresholds(_ json: String) throws -> String {
        let directory = try cli.temporaryDirectory()
        let path = directory.appendingPathComponent("thresholds.json").path
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    static let quickRun = #""run": { "scenarios": ["steady-reads"], "stores": ["mutex", "serial-queue"], "duration": "60ms", "rounds": 3, "tasks": 4 }"#

    @Test func passingFileExitsZero() async throws {
        let path = try thresholds(#"""
            { "version": 1, "run": { "scenarios": ["steady-reads", "expiry-storm"], "stores": ["mutex", "serial-queue"], "duration": "60ms", "rounds": 3, "tasks": 4 },
              "limits": [
                { "metric": "refreshes_per_expiry", "store": "*", "scenario": "expiry-storm", "max": 1 },
                { "metric": "refresh_calls", "store": "mutex", "scenario": "expiry-storm", "max": 3 },
                { "metric": "throughput_ops_per_s", "store": "mutex", "scenario": "steady-reads", "min_ratio": 0.001, "of": { "store": "serial-queue" } }
              ] }
            """#)
        // The ratio limit is the mechanism, not a measurement: 60 ms of a debug build beside the other
        // suites measured mutex at 0.0954× serial-queue once, so the limit leaves a hundredfold below that.
        let run = try await cli.run(["check", "--thresholds", path, "--quiet"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("checks passed"))
    }

    @Test("a broken store included fails the gate")
    func brokenStore() async throws {
        let path = try thresholds(#"""
            { "version": 1, "run": { "stores": ["actor-naive"], "scenarios": ["expiry-storm"], "rounds": 3, "tasks": 8 },
              "limits": [] }
            """#)
        let run = try await cli.run(["check", "--thresholds", path, "--quiet"])
        #expect(run.status == 1)
        #expect(run.stdout.contains("actor-naive × expiry-storm: invariants"))
        #expect(run.stdout.contains("violated I1"))
    }

    @Test(
        "an allocation limit below the measured value fails the gate",
        .enabled(if: TestEnvironment.allocationsCountable, "the sanitizer serves malloc in a TSan build, so nothing counts allocations"))
    func allocationLimit() async throws {
        let path = try thresholds(#"""
            { "version": 1, \#(Self.quickRun),
              "limits": [ { "metric": "allocs_per_op", "store": "serial-queue", "scenario": "steady-reads", "max": 0.5 } ] }
            """#)
        let run = try await cli.run(["check", "--thresholds", path, "--quiet", "--format", "json"])
        #expect(run.status == 1)
        let outcomes = try JSONDecoder().decode([CheckOutcome].self, from: Data(run.stdout.utf8))
        let failed = outcomes.filter { !$0.passed }
        #expect(failed.count == 1)
        #expect(failed.first?.source == "limits[0]")
    }

    @Test("an impossible ratio fails the gate")
    func impossibleRatio() async throws {
        let path = try thresholds(#"""
            { "version": 1, \#(Self.quickRun),
              "limits": [ { "metric": "throughput_ops_per_s", "store": "serial-queue", "scenario": "steady-reads", "min_ratio": 1000, "of": { "store": "mutex" } } ] }
            """#)
        let run = try await cli.run(["check", "--thresholds", path, "--quiet"])
        #expect(run.status == 1)
        #expect(run.stdout.contains("1 of"))
        #expect(run.stdout.contains("[limits[0]]"))
    }

    @Test(
        "a malformed file exits 2 naming the file and the key",
        arguments: [
            (#"{ "version": 1, "limits": [ { "metric": "allocs_per_op", "max": "one" } ] }"#, "limits[0].max: must be a number"),
            (#"{ "version": 1, "limits": [ { "metric": "p99", "max": 1 } ] }"#, "limits[0].metric: unknown metric 'p99'"),
            (#"{ "version": 1, "limits": [ { "metric": "p99_ns", "store": "mutex", "max": 100 } ] }"#, "limits[0].max: 'p99_ns' is a timing"),
            (#"{ "version": 1, "limits": [ { "metric": "allocs_per_op", "mx": 1 } ] }"#, "limits[0].mx: unknown key"),
            (#"{ "version": 1, "limits": [ { "metric": "allocs_per_op", "store": "nosuch", "max": 1 } ] }"#, "limits[0].store: unknown store 'nosuch'"),
            (#"{ "version": 1, "limits": [ { "metric": "throughput_ops_per_s", "min_ratio": 1 } ] }"#, "limits[0].of: is missing"),
            (#"{ "version": 2, "limits": [] }"#, "version: must be 1"),
            (#"{ "version": 1, "run": { "rounds": 0 }, "limits": [] }"#, "run.rounds: must be between 1 and 100000"),
            (#"{ "version": 1, "limits": [ "#, "is not valid JSON"),
            (
                #"{ "version": 1, "limits": [ { "metric": "throughput_ops_per_s", "store": "mutex", "operation": "read", "min_ratio": 0.1, "of": { "baseline": "plain_load" } } ] }"#,
                "limits[0].of.baseline: plain_load compares with throughput_ops_per_s of operation sync-read only"
            ),
        ])
    func malformed(_ json: String, _ mention: String) async throws {
        let path = try thresholds(json)
        let run = try await cli.run(["check", "--thresholds", path, "--quiet"])
        #expect(run.status == 2)
        #expect(run.stderr.contains(path), "names the file: \(run.stderr)")
        #expect(run.stderr.contains(mention), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1)
    }

    @Test("sync-read limits: a store without a synchronous read is not measured, never given the async figure")
    func syncReadLimits() async throws {
        // mutex's two limits only need to be measured, so they are bounds no run can miss: a
        // p50, which one preempted thread cannot move (a p99 of 93 ms was seen with the whole
        // suite running beside it).
        let path = try thresholds(#"""
            { "version": 1, "run": { "scenarios": ["steady-reads"], "stores": ["mutex", "actor-task"], "duration": "60ms", "tasks": 4 },
              "limits": [
                { "metric": "throughput_ops_per_s", "store": "mutex", "scenario": "steady-reads", "operation": "sync-read", "min_ratio": 0.00001, "of": { "baseline": "plain_load" } },
                { "metric": "p50_ns", "store": "mutex", "scenario": "steady-reads", "operation": "sync-read", "max_ratio": 100000, "of": { "baseline": "harness_overhead_ns" } },
                { "metric": "throughput_ops_per_s", "store": "actor-task", "scenario": "steady-reads", "operation": "sync-read", "min_ratio": 0.01, "of": { "baseline": "plain_load" } },
                { "metric": "p50_ns", "store": "actor-task", "scenario": "steady-reads", "operation": "sync-read", "max_ratio": 100000, "of": { "baseline": "harness_overhead_ns" } }
              ] }
            """#)
        let run = try await cli.run(["check", "--thresholds", path, "--quiet", "--format", "json"])
        #expect(run.status == 1, "\(run.stderr)")
        let outcomes = try JSONDecoder().decode([CheckOutcome].self, from: Data(run.stdout.utf8))
        let bySource = Dictionary(grouping: outcomes, by: \.source)
        #expect(bySource["limits[0]"]?.allSatisfy(\.passed) == true, "\(outcomes)")
        #expect(bySource["limits[1]"]?.allSatisfy(\.passed) == true, "\(outcomes)")
        for source in ["limits[2]", "limits[3]"] {
            #expect(bySource[source]?.allSatisfy { !$0.passed && $0.measured.contains("not measured") } == true, "\(source): \(outcomes)")
        }
    }

    @Test func missingFileExitsTwo() async throws {
        let run = try await cli.run(["check", "--thresholds", "/nonexistent/thresholds.json"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("/nonexistent/thresholds.json: (file): cannot be read"))
    }

    @Test(
        "--update rewrites the limits from the run, and the result passes",
        .enabled(if: TestEnvironment.allocationsCountable, "the sanitizer serves malloc in a TSan build, so nothing counts allocations"))
    func update() async throws {
        let path = try thresholds(#"""
            { "version": 1, \#(Self.quickRun),
              "limits": [
                { "metric": "allocs_per_op", "store": "serial-queue", "scenario": "steady-reads", "max": 0.5 },
                { "metric": "throughput_ops_per_s", "store": "serial-queue", "scenario": "steady-reads", "min_ratio": 1000, "of": { "store": "mutex" } }
              ] }
            """#)
        #expect(try await cli.run(["check", "--thresholds", path, "--quiet"]).status == 1)
        let update = try await cli.run(["check", "--thresholds", path, "--update", "--quiet"])
        #expect(update.status == 0, "\(update.stderr)")
        let rewritten = try Thresholds.load(path: path, knownStores: ["mutex", "serial-queue"])
        #expect(rewritten.limits.count == 2)
        if case .max(let limit) = rewritten.limits[0].bound { #expect(limit > 0.5) } else { Issue.record("kept its kind") }
        // Rewritten from the run: serial-queue is never 1,500 times mutex. (Which of the two is
        // faster in a short run on a loaded machine is not this test's business.)
        if case .minRatio(let ratio, _) = rewritten.limits[1].bound { #expect(ratio < 1000) } else { Issue.record("kept its kind") }
        // The count passes on a rerun; the ratio's 1.5× headroom is for a quiet machine, not for
        // this suite's parallel load, so only its direction is checked above.
        let again = try await cli.run(["check", "--thresholds", path, "--quiet", "--format", "json"])
        let outcomes = try JSONDecoder().decode([CheckOutcome].self, from: Data(again.stdout.utf8))
        let countOutcomes = outcomes.filter { $0.source == "limits[0]" }
        #expect(!countOutcomes.isEmpty && countOutcomes.allSatisfy { $0.passed }, "\(outcomes)")
    }

    @Test("the project's own thresholds file is valid")
    func projectThresholds() throws {
        let path = CommandLineTests.packageRoot.appendingPathComponent("thresholds.json").path
        let thresholds = try Thresholds.load(path: path, knownStores: SessionStoresNames.all)
        #expect(!thresholds.limits.isEmpty)
        #expect(thresholds.limits.contains { $0.metric == .refreshesPerExpiry && $0.bound == .max(1) })
    }
}

import SessionStores

enum SessionStoresNames {
    static var all: [String] { StoreCatalog.all.map(\.name) }
}
