import SessionBench
import SessionContract
import SessionOracle
import SessionStores
import Testing

/// The promises only the contract's model judges: a store that breaks each, run through the
/// default scenarios as `compare` runs them, is caught with the right id; a correct store
/// written its own way passes.
@Suite(
    "The contract's model catches what a list of checks missed", .tags(.slow), .skippedInQuickRun, .timeLimit(.minutes(30)), .inProcessTurn,
    .disabled(if: TestEnvironment.isThreadSanitized, Comment(rawValue: TestEnvironment.heavySuiteSkipped)))
struct ContractModelTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let store: StoreDescriptor
        let expected: Invariant
        var testDescription: String { "\(store.name) → \(expected)" }
    }

    static let cases: [Case] = [
        Case(store: SplitCacheStore.descriptor("split-cache"), expected: .genuine),
        Case(store: IgnoresSkewStore.descriptor("ignores-skew"), expected: .fresh),
        Case(store: ForgetsRevocationStore.descriptor("forgets-revocation"), expected: .revocationFinal),
        Case(store: SilentReloginStore.descriptor("silent-relogin"), expected: .sessionKept),
        Case(store: UncancelledKeepAliveStore.descriptor("uncancelled-keep-alive"), expected: .signOutFence),
        Case(store: HeaderCacheStore.descriptor("header-cache"), expected: .signOutFence),
        Case(store: SyncNeverReadyStore.descriptor("sync-never-ready"), expected: .served),
        Case(store: SyncLastSeenStore.descriptor("sync-last-seen"), expected: .fresh),
        Case(store: StickyRevocationStore.descriptor("sticky-revocation"), expected: .sessionKept),
        Case(store: KeepsSessionOnRefusalStore.descriptor("keeps-session-on-refusal"), expected: .noCrossUserLeak),
        Case(store: SwallowsSignInErrorStore.descriptor("swallows-sign-in-error"), expected: .served),
    ]

    /// The default scenarios over one store, in compare's order; with `until`, only up to the
    /// first that reports it.
    static func runDefaults(_ store: StoreDescriptor, until expected: Invariant? = nil) async -> [ScenarioResult] {
        let runner = ScenarioRunner(hangTimeout: TestEnvironment.hangTimeout)
        var results: [ScenarioResult] = []
        for scenario in ScenarioCatalog.defaults where scenario.applies(to: store) && !scenario.needsStorage {
            let result = await runner.run(store, scenario)
            results.append(result)
            if result.verdict == .hung { break }
            if let expected, result.violations.contains(where: { $0.invariant == expected }) { break }
        }
        return results
    }

    @Test(arguments: cases)
    func caught(_ testCase: Case) async throws {
        let results = await Self.runDefaults(testCase.store, until: testCase.expected)
        let summary = results.map {
            "\($0.scenario): \(ResultsReport.verdictText($0))" + ($0.hang.map { " (\($0.phase): \($0.detail ?? ""))" } ?? "")
                + ($0.failure.map { " (\($0))" } ?? "")
        }.joined(separator: "; ")
        let shown = results.flatMap(\.violations).filter { $0.invariant == testCase.expected }
        #expect(!shown.isEmpty, "\(summary)")
        #expect(shown.contains { !$0.trace.isEmpty }, "a trace points at the mistake: \(shown)")
        #expect(!results.contains { $0.verdict == .hung || $0.verdict == .error }, "\(summary)")
    }

    @Test("a correct store written its own way passes every default scenario")
    func control() async throws {
        let results = await Self.runDefaults(SessionBoxStore.descriptor("session-box"))
        for result in results {
            #expect(result.verdict == .pass, "\(result.scenario): \(result.violations) \(result.failure ?? "")")
        }
        #expect(results.count >= 7)
    }

    @Test(
        "the default scenarios drive every transition of the lifecycle, with a synchronous read and without",
        arguments: ["mutex", "actor-task"])
    func coverage(_ name: String) async throws {
        for store in [try #require(StoreCatalog.named(name))] {
            let results = await Self.runDefaults(store)
            var coverage = LifecycleCoverage()
            for result in results { if let other = result.coverage { coverage.merge(other) } }
            let expected = LifecycleCoverage.expected.filter {
                $0.event != .currentToken || store.offersSynchronousRead
            }
            let missing = expected.filter { !coverage.seen.contains($0) }
            #expect(missing.isEmpty, "\(store.name) never met: \(missing)")
            #expect(coverage.parkedAcrossFence && coverage.readRightAfterFence, "\(store.name)")
        }
    }
}

/// A store whose refresh rate limit runs on real time is not a store that gives up: under the
/// rounds' compressed time its refusals are reported apart, and `pace` spaces the rounds so they
/// can be judged.
@Suite("A refresh rate limit on real time", .tags(.slow), .skippedInQuickRun, .serialized)
struct RefreshWindowTests {
    static func scenario(rounds: Int, pace: Duration? = nil) throws -> Scenario {
        var scenario = try ScenarioCatalog.named("expiry-storm")
        scenario.tasks = 8
        scenario.rounds = rounds
        scenario.pace = pace
        return scenario
    }

    let runner = ScenarioRunner(hangTimeout: TestEnvironment.hangTimeout)

    @Test("5 refreshes in 30 s: refusals under compressed time are the store's own limit, not I12")
    func compressed() async throws {
        RefreshWindowStore.window = (5, .seconds(30))
        let result = await runner.run(RefreshWindowStore.descriptor("refresh-window"), try Self.scenario(rounds: 12))
        #expect(result.verdict == .pass, "\(result.violations)")
        #expect((result.refusedByStoreLimit ?? 0) > 0)
    }

    @Test("paced so that the limit is never reached, nothing is refused; paced too tightly, a refusal is judged")
    func paced() async throws {
        RefreshWindowStore.window = (2, .milliseconds(400))
        let spaced = await runner.run(
            RefreshWindowStore.descriptor("refresh-window"), try Self.scenario(rounds: 5, pace: .milliseconds(500)))
        #expect(spaced.verdict == .pass, "\(spaced.violations)")
        #expect(spaced.refusedByStoreLimit == nil)
        RefreshWindowStore.window = (1, .seconds(30))
        let tight = await runner.run(
            RefreshWindowStore.descriptor("refresh-window"), try Self.scenario(rounds: 3, pace: .milliseconds(10)))
        #expect(tight.violations.contains { $0.invariant == .served }, "\(tight.violations)")
        #expect(tight.refusedByStoreLimit == nil)
    }
}
