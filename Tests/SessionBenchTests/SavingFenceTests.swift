import Foundation
import SessionBench
import SessionOracle
import Testing

/// The round that ends a session while the store saves its refreshed grant, run as `compare`
/// runs it: in a measuring process of its own, whose threads are the harness's and the store's.
@Suite("A sign-out or a switch during the save", .timeLimit(.minutes(10)))
struct SavingFenceTests {
    @Test(
        "a store that saves after letting go of its lock keeps the ended session: I16 in sign-out-race and user-switch; stores that keep their session correctly pass"
    )
    func savesAfterUnlock() async throws {
        let run = try await ToolProcess.run(
            [
                "compare", "--stores", "saves-after-unlock,mutex,serial-queue", "--scenario",
                "sign-out-race,user-switch",
                "--rounds", "12", "--tasks", "8", "--no-explore", "--format", "json", "--quiet",
            ],
            environment: ["SESSION_BENCH_SELF_TEST_STORES": "1"], timeout: 300)
        #expect(run.status == 1, "\(run.stderr)")
        let report = try JSONDecoder().decode(ResultsReport.self, from: Data(run.stdout.utf8))
        for scenario in ["sign-out-race", "user-switch"] {
            let broken = try #require(
                report.results.first { $0.store == "saves-after-unlock" && $0.scenario == scenario })
            let saved = broken.violations.filter { $0.invariant == .signOutDurable }
            #expect(!saved.isEmpty, "\(scenario): \(broken.violations.map(\.summary))")
            #expect(saved.contains { $0.summary.contains("saved generation") }, "\(saved.map(\.summary))")
            for store in ["mutex", "serial-queue"] {
                let result = try #require(report.results.first { $0.store == store && $0.scenario == scenario })
                #expect(result.verdict == .pass, "\(store) in \(scenario): \(result.violations.map(\.summary))")
            }
        }
    }
}
