import SessionContract
@testable import SessionMeasurement
import SessionOracle
import Testing

@testable import SessionBench

/// A run whose own figures contradict its scenario — no restart in crash-restart, no refresh in a
/// storm, no read in steady reads — is never a pass: `ScenarioRunner.decide` makes it an error
/// saying why, by its family's rule. Each rule on figures written by hand, beside a run that is
/// right to be quiet and still passes.
@Suite("A run that did not do its scenario's work")
struct ScenarioContradictionTests {
    static func scenario(_ name: String) throws -> Scenario {
        try #require(try ScenarioCatalog.resolved(name).first)
    }

    /// The verdict `scenario` gets with the figures `figures` writes (violations and failure none,
    /// unless it writes them).
    static func decided(_ scenario: Scenario, _ figures: (inout ScenarioResult) -> Void) -> ScenarioResult {
        var result = ScenarioResult(store: "mutex", scenario: scenario, verdict: .pass)
        figures(&result)
        ScenarioRunner.decide(&result, of: scenario)
        return result
    }

    /// Latency summaries holding `count` saves.
    static func saves(_ count: Int) -> [LatencySummary] {
        var recorder = LatencyRecorder()
        for _ in 0..<count { recorder.record(.save, nanoseconds: 800_000) }
        return recorder.summaries
    }

    static func expectError(_ result: ScenarioResult, naming words: String, _ context: String) {
        #expect(result.verdict == .error, "\(context): \(result.verdict)")
        #expect(result.failure?.contains("the run did not do what \(result.scenario) does") == true, "\(context)")
        #expect(result.failure?.contains(words) == true, "\(context): \(result.failure ?? "no failure")")
    }

    static let storms = [
        "expiry-storm", "401-storm", "flaky-server", "cancellation-storm", "family", "scale-storm", "sign-out-race",
        "user-switch",
    ]

    @Test("storms: no refresh call, no storm or no call served is an error; sign-out races count no storms and pass", arguments: storms)
    func storm(name: String) throws {
        let scenario = try Self.scenario(name)
        let countsStorms = name != "sign-out-race" && name != "user-switch"
        func healthy(_ result: inout ScenarioResult) {
            result.operations = 500
            result.refreshCalls = scenario.rounds
            result.storms = countsStorms ? scenario.rounds : 0
            result.stormRefreshCalls = result.storms
        }
        #expect(Self.decided(scenario, healthy).verdict == .pass, "\(name)")
        Self.expectError(Self.decided(scenario) { healthy(&$0); $0.refreshCalls = 0 }, naming: "no refresh call", name)
        Self.expectError(Self.decided(scenario) { healthy(&$0); $0.operations = 0 }, naming: "no call was served", name)
        if countsStorms {
            Self.expectError(Self.decided(scenario) { healthy(&$0); $0.storms = 0 }, naming: "no storm ran", name)
        }
    }

    @Test("steady reads: no read served is an error; no refresh is right for a long-lived token", arguments: ["steady-reads", "writes-under-reads"])
    func steady(name: String) throws {
        let scenario = try Self.scenario(name)
        #expect(Self.decided(scenario) { $0.operations = 120_000 }.verdict == .pass, "\(name), no refresh")
        Self.expectError(Self.decided(scenario) { $0.operations = 0 }, naming: "no read was served", name)
    }

    @Test("step-up: no burst, or bursts with no prompt, is an error")
    func stepUp() throws {
        let scenario = try Self.scenario("step-up")
        func healthy(_ result: inout ScenarioResult) {
            result.operations = 2_000
            result.stepUp = StepUpFigures()
            result.stepUp?.bursts = 18
            result.stepUp?.burstPrompts = 12
            result.stepUp?.prompts = 20
        }
        #expect(Self.decided(scenario, healthy).verdict == .pass)
        Self.expectError(Self.decided(scenario) { healthy(&$0); $0.stepUp = nil }, naming: "no burst", "no figures")
        Self.expectError(Self.decided(scenario) { healthy(&$0); $0.stepUp?.bursts = 0 }, naming: "no burst", "no burst")
        Self.expectError(Self.decided(scenario) { healthy(&$0); $0.stepUp?.prompts = 0 }, naming: "no step-up prompt", "no prompt")
    }

    @Test("session-states: no refresh call, or no call served, is an error")
    func sessionStates() throws {
        let scenario = try Self.scenario("session-states")
        func healthy(_ result: inout ScenarioResult) {
            result.operations = 60
            result.refreshCalls = 12
            result.observers = scenario.tasks
        }
        #expect(Self.decided(scenario, healthy).verdict == .pass)
        Self.expectError(Self.decided(scenario) { healthy(&$0); $0.refreshCalls = 0 }, naming: "no refresh call", "refresh")
        Self.expectError(Self.decided(scenario) { healthy(&$0); $0.operations = 0 }, naming: "no call was served", "calls")
    }

    /// A crash-restart run's figures as a correct store's run has them.
    static func restarted(_ result: inout ScenarioResult) {
        var figures = PersistenceFigures(backend: "json-file", protectsAtRest: false, reuseGraceSeconds: 0)
        figures.processes = 21
        figures.crashes = 20
        figures.restarts = 10
        figures.survived = 4
        figures.endedByReuse = 6
        result.persistence = figures
        result.latencies = saves(30)
        result.refreshCalls = 21
        result.storms = 21
        result.operations = 330
    }

    @Test("crash-restart: no restart where the schedule has one, no save, no refresh, no process is an error")
    func crashRestart() throws {
        let scenario = try Self.scenario("crash-restart:json-file")
        #expect(Self.decided(scenario, Self.restarted).verdict == .pass)
        Self.expectError(
            Self.decided(scenario) { Self.restarted(&$0); $0.persistence?.restarts = 0 }, naming: "no restart", "restarts")
        Self.expectError(Self.decided(scenario) { Self.restarted(&$0); $0.latencies = [] }, naming: "no save", "saves")
        Self.expectError(
            Self.decided(scenario) { Self.restarted(&$0); $0.refreshCalls = 0 }, naming: "no storm's refresh", "refresh")
        Self.expectError(
            Self.decided(scenario) { Self.restarted(&$0); $0.persistence?.processes = 0 }, naming: "no session process",
            "processes")
        Self.expectError(
            Self.decided(scenario) { Self.restarted(&$0); $0.persistence = nil }, naming: "no session process", "nothing")
    }

    @Test("crash-restart: a one-round schedule that signs out, or ends clean, has no live session to restart and passes without one")
    func crashRestartWithNothingToRestart() throws {
        var scenario = try Self.scenario("crash-restart:json-file")
        scenario.rounds = 1
        var quiet: [CrashPoint] = []
        var live: [CrashPoint] = []
        for seed in UInt64(0)..<64 {
            scenario.seed = seed
            let point = CrashPoint.schedule(rounds: 1, seed: seed)[0]
            let result = Self.decided(scenario) { Self.restarted(&$0); $0.persistence?.restarts = 0 }
            if point.signsOut || point == .clean {
                quiet.append(point)
                #expect(result.verdict == .pass, "seed \(seed), \(point.rawValue)")
            } else {
                live.append(point)
                #expect(result.verdict == .error, "seed \(seed), \(point.rawValue)")
            }
        }
        #expect(!quiet.isEmpty && !live.isEmpty, "both kinds of schedule were tried")
    }

    @Test("shared-storage: no event, no refresh call, or no save is an error")
    func sharedStorage() throws {
        let scenario = try Self.scenario("shared-storage:json-file")
        func healthy(_ result: inout ScenarioResult) {
            result.storms = 16
            result.refreshCalls = 16
            result.operations = 400
            result.latencies = Self.saves(16)
        }
        #expect(Self.decided(scenario, healthy).verdict == .pass)
        Self.expectError(Self.decided(scenario) { healthy(&$0); $0.storms = 0 }, naming: "no event ran", "events")
        Self.expectError(Self.decided(scenario) { healthy(&$0); $0.refreshCalls = 0 }, naming: "no refresh call", "refresh")
        Self.expectError(Self.decided(scenario) { healthy(&$0); $0.latencies = [] }, naming: "no save", "saves")
    }

    @Test("a run with findings is judged by them, and a run that failed keeps its own cause")
    func findingsFirst() throws {
        let scenario = try Self.scenario("expiry-storm")
        let violated = Self.decided(scenario) {
            $0.violations = [
                Violation(invariant: .singleFlight, scenario: scenario.name, seed: 1, summary: "two refreshes", trace: [], occurrences: 1)
            ]
        }
        #expect(violated.verdict == .violated)
        #expect(violated.failure == nil)
        let failed = Self.decided(scenario) { $0.failure = "storage write failed: session.json: No space left on device (ENOSPC)" }
        #expect(failed.verdict == .error)
        #expect(failed.failure == "storage write failed: session.json: No space left on device (ENOSPC)")
    }
}
