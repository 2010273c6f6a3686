import Foundation
import SessionOracle
import Testing

@testable import SessionBench
import SessionContract

/// The expectations file (`--expect`): read strictly, applied to results made here, strict
/// both ways (an unexpected violation fails, an expectation that did not happen is stale).
@Suite("Expectations: known violations")
struct ExpectationsTests {
    static let stores = ["actor-naive", "mutex"]

    static func parse(_ text: String) throws(ThresholdsError) -> Expectations {
        try Expectations.parse(Data(text.utf8), path: "e.json", knownStores: stores)
    }

    static func result(_ store: String, _ scenario: String, _ invariants: [Invariant], verdict: ScenarioResult.Verdict? = nil)
        throws -> ScenarioResult
    {
        var result = ScenarioResult(
            store: store, scenario: try ScenarioCatalog.named(scenario),
            verdict: verdict ?? (invariants.isEmpty ? .pass : .violated))
        result.violations = invariants.map {
            Violation(invariant: $0, scenario: scenario, seed: 1, summary: "broke \($0.id)", trace: [], occurrences: 1)
        }
        return result
    }

    @Test("a file reads back as its expectations, a scenario where one is named")
    func reads() throws {
        let file = try Self.parse(
            """
            {"version": 1, "expect": [
              {"store": "actor-naive", "invariant": "I1", "reason": "re-entrant"},
              {"store": "actor-naive", "invariant": "I13", "scenario": "sign-out-race", "reason": "flickers", "sometimes": true}
            ]}
            """)
        #expect(
            file.expectations == [
                .init(store: "actor-naive", invariant: .singleFlight, reason: "re-entrant"),
                .init(store: "actor-naive", invariant: .sessionKept, scenario: "sign-out-race", reason: "flickers", sometimes: true),
            ])
    }

    @Test(
        "a wrong file is one error naming the key",
        arguments: [
            (#"{"expect": []}"#, "version: is missing"),
            (#"{"version": 1}"#, "expect: is missing"),
            (#"{"version": 1, "expect": [], "extra": 1}"#, "extra"),
            (#"{"version": 1, "expect": [{"store": "nope", "invariant": "I1", "reason": "r"}]}"#, "unknown store 'nope'"),
            (#"{"version": 1, "expect": [{"store": "mutex", "invariant": "1", "reason": "r"}]}"#, "is not an invariant id"),
            (#"{"version": 1, "expect": [{"store": "mutex", "invariant": "I99", "reason": "r"}]}"#, "is not an invariant id"),
            (#"{"version": 1, "expect": [{"store": "mutex", "invariant": "I1"}]}"#, "reason: is missing"),
            (#"{"version": 1, "expect": [{"store": "mutex", "invariant": "I1", "reason": " "}]}"#, "reason: is empty"),
            (#"{"version": 1, "expect": [{"store": "mutex", "invariant": "I1", "reason": "r", "scenario": "nope"}]}"#,
             "unknown scenario"),
            (#"{"version": 1, "expect": [{"store": "mutex", "invariant": "I1", "reason": "r"}, {"store": "mutex", "invariant": "I1", "reason": "s"}]}"#,
             "repeats an earlier expectation"),
            ("{", "is not valid JSON"),
            (#"{"version": 1, "expect": [{"store": "mutex", "invariant": "I1", "reason": "r", "sometimes": "yes"}]}"#,
             "sometimes: must be true or false"),
        ])
    func refused(_ text: String, _ mention: String) {
        #expect(throws: ThresholdsError.self) { try Self.parse(text) }
        do {
            _ = try Self.parse(text)
        } catch {
            #expect(error.description.hasPrefix("e.json: "), "\(error)")
            #expect(error.description.contains(mention), "\(error)")
        }
    }

    @Test("every violation expected: known; any other: still a failure, the expected ones named beside it")
    func applied() throws {
        let file = Expectations([
            .init(store: "actor-naive", invariant: .singleFlight, reason: "re-entrant"),
            .init(store: "actor-naive", invariant: .noReuse, reason: "follows from I1"),
        ])
        var results = [
            try Self.result("actor-naive", "expiry-storm", [.singleFlight, .noReuse]),
            try Self.result("actor-naive", "401-storm", [.singleFlight, .noHang]),
            try Self.result("mutex", "expiry-storm", [.singleFlight]),
        ]
        let stale = file.apply(to: &results)
        #expect(stale.isEmpty)
        #expect(results[0].verdict == .known && results[0].verdict.passes)
        #expect(results[0].known?.map(\.reason) == ["re-entrant", "follows from I1"])
        #expect(ResultsReport.verdictText(results[0]) == "known I1,I7")
        #expect(results[1].verdict == .violated && !results[1].verdict.passes)
        #expect(ResultsReport.verdictText(results[1]) == "FAIL I3 (+1 known)")
        // Another store's violation is never excused by an expectation for a different store.
        #expect(results[2].verdict == .violated && results[2].known == nil)
    }

    @Test("an expectation that did not happen where it could have is stale; where its store or scenario did not run, or it says 'sometimes', it is not")
    func stale() throws {
        let file = Expectations(
            [
                .init(store: "actor-naive", invariant: .singleFlight, reason: "re-entrant"),
                .init(store: "actor-naive", invariant: .noReuse, scenario: "401-storm", reason: "only there"),
                .init(store: "mutex", invariant: .singleFlight, reason: "never ran"),
                .init(store: "actor-naive", invariant: .sessionKept, reason: "comes and goes", sometimes: true),
            ], path: "e.json")
        var results = [
            try Self.result("actor-naive", "expiry-storm", []),
            try Self.result("actor-naive", "sign-out-race", [.noHang], verdict: .hung),
        ]
        let stale = file.apply(to: &results)
        #expect(stale.map(\.expectation.invariant) == [.singleFlight])
        #expect(stale.first?.scenarios == ["expiry-storm"], "a hung run could not have shown it")
        #expect(Expectations.describe(stale[0], file: file.path).contains("actor-naive I1 in any scenario did not happen (expiry-storm)"))
        #expect(Expectations.describe(stale[0], file: file.path).contains("remove it from e.json"))
        #expect(results[1].verdict == .hung, "a hang is never expected")
    }

    @Test("a store that declares it refreshes on every 401 gets its I6 as known, with the declaration; nothing else is excused")
    func declaredUnconditional401() async throws {
        let scenario = try ScenarioCatalog.named("401-storm")
        let runner = ScenarioRunner(hangTimeout: TestEnvironment.hangTimeout)
        let declared = StoreDescriptor(
            name: "over-eager-401", summary: "refreshes on any 401, and says so", isReferenceBroken: true,
            refreshesUnconditionallyOn401: true
        ) { OverEagerRejectionStore(configuration: $0) }
        let excused = await runner.run(declared, scenario)
        let i6 = excused.violations.filter { $0.invariant == .staleRejectionDoesNotRefresh }
        #expect(!i6.isEmpty, "the check still runs and still finds it: \(ResultsReport.verdictText(excused))")
        #expect(excused.known?.map(\.invariant) == [.staleRejectionDoesNotRefresh])
        #expect(excused.known?.first?.reason == Expectations.unconditional401)
        let others = excused.violations.filter { $0.invariant != .staleRejectionDoesNotRefresh }
        #expect(excused.verdict == (others.isEmpty ? .known : .violated), "\(ResultsReport.verdictText(excused))")
        // Undeclared, the same store fails I6.
        let plain = await runner.run(OverEagerRejectionStore.descriptor("over-eager-401"), scenario)
        #expect(plain.known == nil && plain.verdict == .violated)
        #expect(plain.violations.contains { $0.invariant == .staleRejectionDoesNotRefresh })
        // A store that declares it but whose other promises break still fails them.
        var broken = excused
        broken.violations.append(
            Violation(invariant: .singleFlight, scenario: "401-storm", seed: 1, summary: "two refreshes", trace: [], occurrences: 1))
        #expect(!broken.isAllKnown)
    }

    @Test("in JUnit a known violation is skipped with its reason, not a failure")
    func junit() throws {
        let file = Expectations([.init(store: "actor-naive", invariant: .singleFlight, reason: "re-entrant")])
        var results = [try Self.result("actor-naive", "expiry-storm", [.singleFlight])]
        _ = file.apply(to: &results)
        let outcomes = ResultsReport.junitOutcomes(BenchmarkGroup.grouping(results)[0])
        let single = try #require(outcomes.first { $0.0 == .singleFlight })
        #expect(single.1 == .skipped("known: broke I1 (expected: re-entrant)"))
    }
}
