import Foundation
import SessionOracle
import Testing

@testable import SessionBench
@testable import SessionBenchCLI

/// Timing as the schedule's choice: a server answer may land late, after a timer of the store's
/// own; main-queue blocks run on the scheduler's thread; and `compare` folds a short exploration
/// into its verdict.
extension ExploreCommandTests {
    @Test("a store that gives up on the shared refresh after a timeout is found: the answer may land after its timer")
    func lateAnswerFindsImpatientWaiter() async throws {
        let run = try await ToolProcess.run(
            ["explore", "--stores", "impatient-waiter", "--scenario", "expiry-storm", "--quiet"],
            environment: Self.selfTest, timeout: 120)
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        let row = Self.row("impatient-waiter", in: run.stdout)
        #expect(row.prefix(2) == ["impatient-waiter", "violated"], "\(run.stdout)")
        #expect(row.dropFirst(2).first?.hasPrefix("I1") == true, "\(run.stdout)")
        let replay = try #require(Self.replayArguments(in: run.stdout), "\(run.stdout)")
        let digest = try #require(Self.digest(in: run.stdout), "\(run.stdout)")
        let again = try await ToolProcess.run(replay + ["--quiet"], environment: Self.selfTest, timeout: 120)
        #expect(again.status == 1 && Self.digest(in: again.stdout) == digest, "\(again.stdout)")
    }

    @Test("a correct store that answers through the main queue is explored, and passes: no deadlock, nothing escaped")
    func mainQueueDeliveryPasses() async throws {
        for scenario in ["expiry-storm", "sign-out-race"] {
            let run = try await ToolProcess.run(
                [
                    "explore", "--stores", "main-queue-delivery", "--scenario", scenario, "--schedules", "300",
                    "--quiet",
                ],
                environment: Self.selfTest, timeout: 120)
            #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
            #expect(
                Self.row("main-queue-delivery", in: run.stdout).prefix(3) == ["main-queue-delivery", "pass", "300"])
        }
    }

    @Test(
        "compare's verdict includes the search: a store every paced scenario passes fails by its schedule, with the replay; --no-explore leaves it out"
    )
    func compareExplores() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("explore-compare-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let json = directory.appendingPathComponent("run.json").path
        let arguments = ["compare", "--stores", "mutex,cancels-shared-401", "--scenario", "cancellation-storm"]
        let run = try await ToolProcess.run(
            arguments + ["--explore-schedules", "200", "--output", json], environment: Self.selfTest, timeout: 300)
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        let report =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as! [String: Any]
        let results = report["results"] as! [[String: Any]]
        let verdicts = Dictionary(
            uniqueKeysWithValues: results.map { ($0["store"] as! String, $0["verdict"] as! String) })
        #expect(verdicts == ["mutex": "pass", "cancels-shared-401": "violated"])
        let broken = try #require(results.first { $0["store"] as? String == "cancels-shared-401" })
        let violations = broken["violations"] as! [[String: Any]]
        let explored = try #require(violations.first { ($0["summary"] as! String).hasPrefix("explore, schedule #") })
        #expect(explored["invariant"] as? Int == 11)
        let trace = explored["trace"] as! [String]
        #expect(
            trace.contains {
                $0.hasPrefix("replay: session-bench explore --stores cancels-shared-401 --scenario cancellation-storm")
            })
        let metadata = report["metadata"] as! [String: Any]
        #expect((metadata["exploration"] as? [String])?.first?.hasPrefix("explore: 200 seeded schedule(s)") == true)
        #expect(run.stdout.contains("note: explore: 200 seeded schedule(s) per store × scenario"), "\(run.stdout)")

        let paced = try await ToolProcess.run(
            arguments + ["--no-explore", "--quiet"], environment: Self.selfTest, timeout: 300)
        #expect(paced.status == 0, "\(paced.stdout)\(paced.stderr)")
        #expect(!paced.stdout.contains("explore:"), "\(paced.stdout)")

        let both = try await ToolProcess.run(
            arguments + ["--no-explore", "--explore-schedules", "5"], environment: Self.selfTest, timeout: 60)
        #expect(both.status == 2 && both.stderr.contains("leave out --explore-schedules"), "\(both.stderr)")
    }
}

/// How `compare` folds an exploration into a result, on outcomes written by hand.
@Suite("Compare: an exploration folded into the verdict")
struct CompareExplorationFoldTests {
    static let plan = ExplorePlan(
        stores: ["s"], scenario: CompareExploration.explored(try! ScenarioCatalog.named("expiry-storm"))!,
        strategy: .random, seed: 1, depth: 3, schedules: 10, seconds: nil, replay: nil)

    static func outcome(_ violations: [Invariant], uncontrolled: Int = 0, problem: String? = nil)
        -> ExploreChild.Outcome
    {
        var outcome = ExploreChild.Outcome(
            schedules: 10, steps: 100, seconds: 1, uncontrolledJobs: uncontrolled,
            schedule: violations.isEmpty ? nil : "sbx1:random:9:0.1", failingAt: violations.isEmpty ? nil : 4,
            end: nil,
            violations: violations.map {
                Violation(
                    invariant: $0, scenario: "expiry-storm", seed: 9, summary: "broke", trace: ["a"], occurrences: 1)
            })
        outcome.problem = problem
        outcome.verdict = problem == nil ? nil : .hung
        outcome.interleaving = violations.isEmpty ? nil : ["caller 0 | caller 1"]
        return outcome
    }

    static func result(_ verdict: ScenarioResult.Verdict, _ violations: [Invariant] = []) throws -> ScenarioResult {
        var result = ScenarioResult(store: "s", scenario: try ScenarioCatalog.named("expiry-storm"), verdict: verdict)
        result.violations = violations.map {
            Violation(invariant: $0, scenario: "expiry-storm", seed: 1, summary: "paced", trace: [], occurrences: 1)
        }
        return result
    }

    @Test("a failing schedule turns a pass into a violation, with the interleaving and the replay command")
    func failingSchedule() throws {
        var result = try Self.result(.pass)
        #expect(CompareExploration.fold(Self.outcome([.singleFlight]), Self.plan, into: &result) == nil)
        #expect(result.verdict == .violated)
        let violation = try #require(result.violations.first)
        #expect(
            violation.invariant == .singleFlight && violation.summary.hasPrefix("explore, schedule #4 of 4 callers"))
        #expect(violation.trace.contains("  caller 0 | caller 1"))
        #expect(violation.trace.last == "replay: " + Self.plan.replayCommand("s", ScheduleText("sbx1:random:9:0.1")!))
    }

    @Test("an invariant the paced run already broke is recorded once, the paced run's")
    func oneRecordPerInvariant() throws {
        var result = try Self.result(.violated, [.singleFlight])
        _ = CompareExploration.fold(Self.outcome([.singleFlight, .noReuse]), Self.plan, into: &result)
        #expect(result.violations.map(\.invariant) == [.singleFlight, .noReuse])
        #expect(result.violations[0].summary == "paced")
    }

    @Test("work off the scheduler, or a blocked exploring process, leaves the paced verdict and says why")
    func notExplored() throws {
        var result = try Self.result(.pass)
        let escaped = CompareExploration.fold(Self.outcome([], uncontrolled: 3), Self.plan, into: &result)
        #expect(escaped?.contains("3 job(s) came from threads the scheduler does not drive") == true)
        let blocked = CompareExploration.fold(Self.outcome([], problem: "it was killed"), Self.plan, into: &result)
        #expect(blocked == "not explored: it was killed; judged by the paced run alone")
        #expect(result.verdict == .pass && result.violations.isEmpty)
    }
}

extension ExploreCommandTests {
    @Test("flaky-server: a 401 that replays a failure is caught (I10), and replays")
    func flakyStickyRejection() async throws {
        try await caughtAndReplayed("sticky-401-failure", "flaky-server", "I10", named: "failure-shared-not-sticky")
    }

    @Test(
        "flaky-server: a failed refresh that puts its grant back past a sign-out or a switch is caught, and replays; correct stores pass"
    )
    func flakyRollbackPastFence() async throws {
        let run = try await ToolProcess.run(
            [
                "explore", "--stores", "rollback-on-failure,mutex,actor-fast-read", "--scenario", "flaky-server",
                "--quiet",
            ],
            environment: Self.selfTest, timeout: 120)
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        let row = Self.row("rollback-on-failure", in: run.stdout)
        #expect(row.prefix(2) == ["rollback-on-failure", "violated"], "\(run.stdout)")
        #expect(row.dropFirst(2).first.map { $0.hasPrefix("I8") || $0.hasPrefix("I9") } == true, "\(run.stdout)")
        for store in ["mutex", "actor-fast-read"] {
            #expect(Self.row(store, in: run.stdout).prefix(3) == [store, "pass", "1000"], "\(run.stdout)")
        }
        let replay = try #require(Self.replayArguments(in: run.stdout), "\(run.stdout)")
        let digest = try #require(Self.digest(in: run.stdout), "\(run.stdout)")
        let again = try await ToolProcess.run(replay + ["--quiet"], environment: Self.selfTest, timeout: 120)
        #expect(again.status == 1 && Self.digest(in: again.stdout) == digest, "\(again.stdout)")
    }
}
