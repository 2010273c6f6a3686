import Foundation
import SessionBench
import SessionContract
import Testing

@testable import SessionBenchCLI

/// The time a measuring process is given before it is killed as hung: a bound on a store's work,
/// so it must hold all of the work the command line asks for, the pace between rounds included.
@Suite("The measuring process's time budget")
struct TimeBudgetTests {
    static let hangTimeout = Duration.seconds(5)

    @Test("a paced scenario's budget holds every pause between its rounds, beyond the unpaced budget")
    func paceIsBudgeted() throws {
        for preset in ScenarioCatalog.all where preset.isRoundBased {
            let unpaced = IsolatedRun.budget(for: [preset], hangTimeout: Self.hangTimeout)
            let paced = ScenarioOverrides(pace: .seconds(6)).applied(to: preset)
            let pauses = Duration.seconds(6) * (paced.rounds - 1)
            #expect(
                IsolatedRun.budget(for: [paced], hangTimeout: Self.hangTimeout) >= unpaced + pauses,
                "\(preset.name): \(paced.rounds) rounds, 6 s apart")
        }
        // The documented judgement of a store with a real-time rate limit: 40 rounds, 6 s apart.
        let storm = ScenarioOverrides(pace: .seconds(6)).applied(to: try ScenarioCatalog.named("expiry-storm"))
        #expect(IsolatedRun.budget(for: [storm], hangTimeout: Self.hangTimeout) >= .seconds(39 * 6))
        // A steady scenario has no rounds to pace, and its budget is as before.
        let steady = try ScenarioCatalog.named("steady-reads")
        #expect(
            IsolatedRun.budget(for: [ScenarioOverrides(pace: .seconds(6)).applied(to: steady)], hangTimeout: Self.hangTimeout)
                == IsolatedRun.budget(for: [steady], hangTimeout: Self.hangTimeout))
    }

    @Test(
        "a run paced past the unpaced budget passes, not HUNG", .tags(.slow), .skippedInQuickRun,
        .disabled(if: TestEnvironment.isThreadSanitized, Comment(rawValue: TestEnvironment.processSuiteSkipped)))
    func pacedRunPasses() async throws {
        // Two rounds a pace apart, the pace a second longer than the whole budget of the same run
        // unpaced: only a budget that counts the pace lets the run finish.
        var storm = try ScenarioCatalog.named("expiry-storm")
        storm.rounds = 2
        storm.tasks = 4
        let unpaced = IsolatedRun.budget(for: [storm], hangTimeout: .milliseconds(500)).secondsValue
        let pace = Int(unpaced.rounded(.up)) + 1
        let run = try await ToolProcess.run(
            [
                "compare", "--stores", "mutex", "--scenario", "expiry-storm", "--rounds", "2", "--tasks", "4",
                "--hang-timeout", "0.5", "--pace", "\(pace)s", "--format", "json", "--quiet",
            ], timeout: unpaced * 4 + 60)
        #expect(run.status == 0, "\(run.stderr)")
        let report = try JSONDecoder().decode(ResultsReport.self, from: Data(run.stdout.utf8))
        #expect(report.results.map(\.verdict) == [.pass], "\(report.results.map { $0.failure ?? "" })")
    }
}
