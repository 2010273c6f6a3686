import SessionBench
import SessionBenchSelfTest
import SessionContract
import SessionMeasurement
import SessionOracle
import SessionStores
import Testing

/// Step-up, API objects across sessions, observable state: every correct store keeps the
/// promises, and a store that breaks one is named by its invariant.
@Suite(
    "Step-up, API objects and observable state", .tags(.slow), .skippedInQuickRun, .timeLimit(.minutes(30)),
    .inProcessTurn)
struct SessionPromiseTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let store: StoreDescriptor
        let expected: Invariant
        let scenario: String
        var testDescription: String { "\(store.name) → \(expected) in \(scenario)" }
    }

    static func selfTest(_ name: String) -> StoreDescriptor { SelfTestStores.all.first { $0.name == name }! }

    static let cases: [Case] = [
        Case(store: StoreCatalog.named("step-up-per-client")!, expected: .promptSingleFlight, scenario: "step-up"),
        Case(store: selfTest("step-up-check-then-prompt"), expected: .promptSingleFlight, scenario: "step-up"),
        Case(store: selfTest("step-up-sticky-denial"), expected: .stepUpSharedNotSticky, scenario: "step-up"),
        Case(store: selfTest("step-up-cancelled-as-dismissed"), expected: .cancellationIsolated, scenario: "step-up"),
        Case(store: selfTest("step-up-survives-switch"), expected: .elevationEndsWithSession, scenario: "step-up"),
        Case(store: selfTest("step-up-one-auth-queue"), expected: .stepUpIndependent, scenario: "step-up"),
        Case(store: selfTest("step-up-token-capturing-client"), expected: .clientFollowsSession, scenario: "step-up"),
        Case(
            store: StoreCatalog.named("actor-single-stream")!, expected: .observersSeeFinalState,
            scenario: "session-states"),
        Case(
            store: NetworkAnnouncesRefreshStore.descriptor("network-announces-refresh"),
            expected: .noSignedInAfterSignOut, scenario: "session-states"),
        Case(
            store: DelayedSpinnerStore.descriptor("delayed-spinner"), expected: .stateOrder, scenario: "session-states"),
    ]

    @Test(arguments: cases)
    func caught(_ testCase: Case) async throws {
        let runner = ScenarioRunner(hangTimeout: TestEnvironment.hangTimeout)
        let result = await runner.run(testCase.store, try ScenarioCatalog.named(testCase.scenario))
        let shown = result.violations.filter { $0.invariant == testCase.expected }
        #expect(!shown.isEmpty, "\(ResultsReport.verdictText(result)): \(result.violations) \(result.failure ?? "")")
        #expect(shown.allSatisfy { !$0.trace.isEmpty || !$0.summary.isEmpty })
    }

    static let offered: [[String]] = ["step-up", "session-states"].flatMap { scenario in
        StoreCatalog.correct.filter { (try? ScenarioCatalog.named(scenario))?.applies(to: $0) == true }
            .map { [$0.name, scenario] }
    }

    @Test("seven correct stores offer both: the five lock and queue stores and the two actor stores")
    func sevenOfferBoth() {
        let stores = [
            "lock-free-read", "mutex", "nslock", "actor-task", "actor-fast-read", "barrier-queue", "serial-queue",
        ]
        #expect(
            Self.offered.map { $0.joined(separator: " × ") }
                == ["step-up", "session-states"].flatMap { scenario in
                    stores.map { "\($0) × \(scenario)" }
                })
    }

    @Test("every correct store that offers them keeps every promise", arguments: offered)
    func correctStoresPass(_ pair: [String]) async throws {
        let runner = ScenarioRunner(hangTimeout: TestEnvironment.hangTimeout)
        let scenario = pair[1]
        let preset = try ScenarioCatalog.named(scenario)
        for store in [try #require(StoreCatalog.named(pair[0]))] {
            let result = await runner.run(store, preset)
            #expect(
                result.verdict == .pass,
                "\(store.name): \(ResultsReport.verdictText(result)) \(result.violations) \(result.failure ?? "")")
            if scenario == "step-up" {
                let figures = try #require(result.stepUp)
                #expect(figures.promptsPerBurst == 1, "\(store.name): one prompt per burst of \(preset.tasks)")
                #expect(figures.bursts == preset.rounds)
            } else {
                #expect(result.latencies.contains { $0.kind == .observerLagOne && $0.count > 0 })
                #expect(result.latencies.contains { $0.kind == .observerLagMany && $0.count >= UInt64(preset.tasks) })
            }
        }
    }

    @Test("the reference-broken per-client store prompts once per API object")
    func perClientPromptCount() async throws {
        // What is counted here is prompts, not time: a burst of this store's on-demand API
        // objects beside a full suite on a loaded machine can outlast the default hang timeout
        // (bursts 0, prompts 0), so it is given ten times that.
        let runner = ScenarioRunner(hangTimeout: TestEnvironment.hangTimeout * 10)
        let preset = try ScenarioCatalog.named("step-up")
        let result = await runner.run(StoreCatalog.named("step-up-per-client")!, preset)
        let figures = try #require(result.stepUp)
        // Half the burst makes its API object on demand; the other half shares the kept four.
        let perBurst = try #require(
            figures.promptsPerBurst, "\(ResultsReport.verdictText(result)) \(result.failure ?? "") \(figures)")
        #expect(perBurst >= Double(preset.tasks / 2), "\(perBurst)")
    }
}
