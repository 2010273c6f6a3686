import SessionBench
import SessionContract
import SessionOracle
import SessionStores
import Testing

/// Every bug class the tool exists to catch, each in a store of its own, run through the
/// default scenarios exactly as `compare` runs them.
@Suite(
    "A default compare catches every bug class", .tags(.slow), .skippedInQuickRun, .timeLimit(.minutes(30)), .inProcessTurn,
    .disabled(if: TestEnvironment.isThreadSanitized, Comment(rawValue: TestEnvironment.heavySuiteSkipped)))
struct BugClassTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let store: StoreDescriptor
        /// The invariant the verdict must name; `nil` for a hang.
        let expected: Invariant?
        /// Where the bug shows (for the test's name).
        let scenario: String
        var testDescription: String { "\(store.name) → \(expected.map { "\($0)" } ?? "HUNG") in \(scenario)" }
    }

    static let cases: [Case] = [
        Case(store: StoreCatalog.named("actor-naive")!, expected: .singleFlight, scenario: "expiry-storm"),
        Case(store: SerializedWithoutRecheckStore.descriptor("serialized-no-recheck"), expected: .singleFlight, scenario: "expiry-storm"),
        Case(store: LateJoinerStore.descriptor("late-joiner"), expected: .singleFlight, scenario: "expiry-storm"),
        Case(store: TwoRefreshPathsStore.descriptor("two-refresh-paths"), expected: .singleFlight, scenario: "401-storm"),
        Case(store: LastWriterWinsCacheStore.descriptor("last-writer-wins-cache"), expected: .monotonic, scenario: "401-storm"),
        Case(store: GivesUpStore.descriptor("gives-up"), expected: .served, scenario: "expiry-storm"),
        Case(store: StorageBlipSignsOutStore.descriptor("storage-blip-signs-out"), expected: .sessionKept, scenario: "steady-reads"),
        Case(store: BlipLogsOutStore.descriptor("blip-logs-out"), expected: .sessionKept, scenario: "flaky-server"),
        Case(store: IgnoresCurrent401Store.descriptor("ignores-current-401"), expected: .staleRejectionDoesNotRefresh, scenario: "401-storm"),
        Case(store: LazySignOutCacheStore.descriptor("lazy-sign-out-cache"), expected: .signOutFence, scenario: "sign-out-race"),
        Case(store: UserSwitchKeepsCacheStore.descriptor("switch-keeps-cache"), expected: .noCrossUserLeak, scenario: "user-switch"),
        Case(store: ResurrectingStore.descriptor("resurrects"), expected: .signOutFence, scenario: "sign-out-race"),
        Case(store: InitiatorRunsRefreshStore.descriptor("initiator-runs-refresh"), expected: .cancellationIsolated, scenario: "cancellation-storm"),
        Case(store: ForgetsWaitersOnFailureStore.descriptor("forgets-waiters-on-failure"), expected: nil, scenario: "flaky-server"),
        Case(store: RetryStormStore.descriptor("retry-storm"), expected: .failureSharedNotSticky, scenario: "flaky-server"),
        Case(store: StickyFailureStore.descriptor("sticky-failure"), expected: .failureSharedNotSticky, scenario: "flaky-server"),
        Case(store: OverEagerRejectionStore.descriptor("over-eager-401"), expected: .staleRejectionDoesNotRefresh, scenario: "401-storm"),
        Case(store: PoisonedByCancellationStore.descriptor("poisoned"), expected: .cancellationIsolated, scenario: "cancellation-storm"),
        Case(store: NoFenceStore.descriptor("no-fence"), expected: .signOutFence, scenario: "sign-out-race"),
    ]

    @Test(arguments: cases)
    func caught(_ testCase: Case) async throws {
        let runner = ScenarioRunner(hangTimeout: TestEnvironment.hangTimeout)
        var results: [ScenarioResult] = []
        // As compare runs them; the scenarios over storage start session processes, which the
        // command-line tests drive.
        // In compare's order, up to the scenario the bug shows in (the rest add nothing to show).
        for scenario in ScenarioCatalog.defaults where scenario.applies(to: testCase.store) && !scenario.needsStorage {
            let result = await runner.run(testCase.store, scenario)
            results.append(result)
            if result.verdict == .hung { break }  // as the command line does: nothing after it is trustworthy
            if scenario.name == testCase.scenario { break }
        }
        let summary = results.map { "\($0.scenario): \(ResultsReport.verdictText($0))" }.joined(separator: "; ")
        if let expected = testCase.expected {
            let shown = results.flatMap(\.violations).filter { $0.invariant == expected }
            #expect(!shown.isEmpty, "\(summary)")
            #expect(shown.contains { !$0.trace.isEmpty }, "a trace points at the bug: \(shown)")
            #expect(results.contains { $0.scenario == testCase.scenario && $0.violations.contains { $0.invariant == expected } }, "\(summary)")
        } else {
            let hung = try #require(results.first { $0.verdict == .hung }, "\(summary)")
            let hang = try #require(hung.hang)
            #expect(hang.stuckCallers > 0)
            #expect(hang.detail?.contains("server call") == true, "the hang says which refresh: \(hang.detail ?? "none")")
        }
    }

    @Test("every invariant has a store that breaks it")
    func everyInvariantCovered() {
        let covered = Set(
            Self.cases.compactMap(\.expected) + OracleTests.cases.map(\.invariant)
                + CrashRestartTests.cases.map(\.expected) + SessionPromiseTests.cases.map(\.expected)
                + ContractModelTests.cases.map(\.expected))
        #expect(covered == Set(Invariant.allCases))
    }
}
