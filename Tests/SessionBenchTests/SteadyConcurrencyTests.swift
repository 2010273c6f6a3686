import SessionBench
import SessionContract
import SessionStores
import Testing

/// Steady callers are all live at once, whatever their number, and a store that cannot keep
/// up with an arrival rate is measured, not reported as hung.
@Suite(
    "Steady callers run at once", .serialized, .timeLimit(.minutes(5)),
    .disabled(if: TestEnvironment.isThreadSanitized, Comment(rawValue: TestEnvironment.heavySuiteSkipped)))
struct SteadyConcurrencyTests {
    static let duration = Duration.milliseconds(200)

    @Test(arguments: [1, 2, 8, 64, 512, 1000])
    func everyCallerRunsAtOnce(_ tasks: Int) async throws {
        var scenario = try ScenarioCatalog.named("steady-reads")
        scenario.tasks = tasks
        scenario.duration = Self.duration
        for store in StoreCatalog.correct {
            let result = await ScenarioRunner(hangTimeout: TestEnvironment.hangTimeout).run(store, scenario)
            #expect(result.verdict == .pass, "\(store.name) × \(tasks): \(result.hang.map { "\($0)" } ?? "") \(result.violations)")
            #expect(result.failedCalls == 0)
            #expect(result.operations > 0)
            // Every caller started before any stopped: one wave, not callers taking turns (which
            // would also take tasks / cores times the duration).
            #expect(result.callersAtOnce == tasks, "\(store.name) × \(tasks): \(result.callersAtOnce ?? 0) at once")
            if tasks >= 64 {
                #expect(result.seconds < Self.duration.seconds * Double(tasks) / 8, "\(store.name) × \(tasks): \(result.seconds)s")
            }
        }
    }

    @Test("an arrival rate beyond the store's capacity stops at the deadline and counts what could not be issued")
    func overloadedOpenLoop() async throws {
        var scenario = try ScenarioCatalog.named("steady-reads")
        scenario.arrivalRate = 1e9
        scenario.duration = .milliseconds(200)
        let result = await ScenarioRunner(hangTimeout: TestEnvironment.hangTimeout).run(StoreCatalog.named("main-actor")!, scenario)
        #expect(result.verdict == .pass, "\(result.hang.map { "\($0)" } ?? "")")
        #expect(result.seconds < 1.5)
        #expect((result.unissuedCalls ?? 0) > 0)
        #expect(result.operations > 0)
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
