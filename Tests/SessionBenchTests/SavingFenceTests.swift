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
                "compare", "--stores", "saves-after-unlock,sign-in-saves-after-unlock,mutex,serial-queue", "--scenario",
                "sign-out-race,user-switch",
                "--rounds", "12", "--tasks", "8", "--no-explore", "--format", "json", "--quiet",
            ],
            environment: ["SESSION_BENCH_SELF_TEST_STORES": "1"], timeout: 300)
        #expect(run.status == 1, "\(run.stderr)")
        let report = try JSONDecoder().decode(ResultsReport.self, from: Data(run.stdout.utf8))
        for scenario in ["sign-out-race", "user-switch"] {
            // The refresh's save overtaken (round 5), and a sign-in's (round 11 of 12).
            for store in ["saves-after-unlock", "sign-in-saves-after-unlock"] {
                let broken = try #require(report.results.first { $0.store == store && $0.scenario == scenario })
                // What it saved is wrong, nothing else: the ended session saved after the fence
                // (I16), or, after a switch, saved over the new session's (I15).
                #expect(
                    !broken.violations.isEmpty
                        && broken.violations.allSatisfy { [.signOutDurable, .durableRotation].contains($0.invariant) },
                    "\(store) in \(scenario): \(broken.violations.map(\.summary))")
                if store == "saves-after-unlock" || scenario == "sign-out-race" {
                    #expect(
                        broken.violations.contains {
                            $0.invariant == .signOutDurable && $0.summary.contains("saved generation")
                        },
                        "\(store) in \(scenario): \(broken.violations.map(\.summary))")
                }
            }
            for store in ["mutex", "serial-queue"] {
                let result = try #require(report.results.first { $0.store == store && $0.scenario == scenario })
                #expect(result.verdict == .pass, "\(store) in \(scenario): \(result.violations.map(\.summary))")
            }
        }
    }
}
