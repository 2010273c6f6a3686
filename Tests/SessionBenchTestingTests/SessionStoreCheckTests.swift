import SessionBench
import SessionBenchTesting
import SessionContract
import SessionOracle
import SessionStores
import Testing

/// The testing library as a user's test target meets it: a correct store passes with no issue,
/// a wrong one fails with the invariant's id and the command that runs the failing scenario again.
@Suite("SessionBenchTesting")
struct SessionStoreCheckTests {
    /// Two storms, short: enough to catch a re-entrant actor, quick enough for a unit test.
    static let check = SessionStoreCheck(
        scenarios: ["expiry-storm", "401-storm"], rounds: 3, duration: .milliseconds(50), environment: [:])

    @Test("a correct store passes: no issue recorded, every scenario judged")
    func correctStorePasses() async throws {
        let mutex = try #require(StoreCatalog.named("mutex"))
        let results = await Self.check.expectCorrect(mutex)
        #expect(results.map(\.scenario) == ["expiry-storm", "401-storm"])
        #expect(results.allSatisfy { $0.verdict == .pass }, "\(results.map(\.verdict))")
    }

    @Test("a re-entrant actor fails with I1, its events, and a swift test command that narrows to the run")
    func wrongStoreFails() async throws {
        let naive = try #require(StoreCatalog.named("actor-naive"))
        let (_, findings) = await Self.check.run(naive) { SessionStoreCheck.command($0, filter: "Tests.Suite/test") }
        let single = try #require(findings.first { $0.invariant?.id == "I1" && $0.scenario == "expiry-storm" })
        #expect(!single.trace.isEmpty)
        #expect(
            single.reproduce
                == "SESSION_BENCH_SCENARIOS=expiry-storm SESSION_BENCH_SEED=1 swift test --filter 'Tests.Suite/test'")
        #expect(single.description.hasPrefix("I1 single-flight — actor-naive × expiry-storm (seed 1): "))
        #expect(single.description.contains("\nreproduce: SESSION_BENCH_SCENARIOS=expiry-storm"))
    }

    @Test("in a @Test, each finding is an issue of that test, naming the test in its command")
    func findingsAreIssues() async throws {
        let naive = try #require(StoreCatalog.named("actor-naive"))
        let check = SessionStoreCheck(scenarios: ["expiry-storm"], rounds: 3, environment: [:])
        await withKnownIssue {
            await check.expectCorrect(naive)
        } matching: { issue in
            // An invariant the store broke, or a run it left without a verdict (a wrong store may also
            // strand its callers, as this one does when the machine is slow enough for the watchdog).
            let text = issue.comments.map(\.rawValue).joined()
            return (text.hasPrefix("I") || text.hasPrefix("no verdict"))
                && text.contains(
                    "swift test --filter 'SessionBenchTestingTests.SessionStoreCheckTests/findingsAreIssues'")
        }
    }

    @Test("the environment narrows the scenarios and the seed, as the printed command sets them")
    func environmentNarrows() {
        let check = SessionStoreCheck(
            scenarios: ["expiry-storm"], seed: 1,
            environment: ["SESSION_BENCH_SCENARIOS": "401-storm, sign-out-race", "SESSION_BENCH_SEED": "42"])
        #expect(check.scenarios == ["401-storm", "sign-out-race"] && check.seed == 42)
        let unset = SessionStoreCheck(environment: [:])
        #expect(unset.scenarios == SessionStoreCheck.inProcessDefaults && unset.seed == 1)
        #expect(!unset.scenarios.contains { $0.hasPrefix("crash-restart") || $0.hasPrefix("shared-storage") })
    }

    @Test("an unknown scenario is a finding that names it, never a silent pass")
    func unknownScenarioIsAFinding() async throws {
        let mutex = try #require(StoreCatalog.named("mutex"))
        let check = SessionStoreCheck(scenarios: ["expiry-strom"], environment: [:])
        let (results, findings) = await check.run(mutex) { _ in "" }
        #expect(results.isEmpty)
        #expect(findings.count == 1 && findings[0].summary.contains("unknown scenario 'expiry-strom'"))
    }

    @Test("a default scenario the store does not offer is left out; a named one is a finding that says what to declare")
    func offeredOnly() async throws {
        let mutex = try #require(StoreCatalog.named("mutex"))
        let plain = StoreDescriptor(name: "plain", summary: "no step-up") { mutex.make($0) }
        #expect(SessionStoreCheck.inProcessDefaults.contains("step-up"))
        let named = SessionStoreCheck(scenarios: ["step-up"], environment: [:])
        let (results, findings) = await named.run(plain) { _ in "" }
        #expect(results.isEmpty)
        #expect(findings.map(\.summary) == ["plain does not declare step-up (offersStepUp), which step-up runs on"])
    }

    @Test("a known violation is not a finding; a known one that did not happen is")
    func expectationsApply() async throws {
        let naive = try #require(StoreCatalog.named("actor-naive"))
        let known = Expectations([
            .init(store: "actor-naive", invariant: .singleFlight, reason: "re-entrant across await", sometimes: true),
            .init(
                store: "actor-naive", invariant: .noReuse, reason: "follows from the double refresh", sometimes: true),
            .init(
                store: "actor-naive", invariant: .revocationFinal, reason: "refreshes a refused session",
                sometimes: true),
            .init(store: "actor-naive", invariant: .sessionKept, reason: "told 'revoked' wrongly", sometimes: true),
            .init(store: "actor-naive", invariant: .monotonic, scenario: "expiry-storm", reason: "never happens"),
        ])
        var check = SessionStoreCheck(scenarios: ["expiry-storm"], rounds: 3, environment: [:])
        check.expectations = known
        var (_, findings) = await check.run(naive) { _ in "" }
        // A run left without a verdict (this wrong store strands its callers when a sanitized build
        // beside other suites is slow enough for the watchdog) says nothing of what did not happen:
        // such a run is run again, up to twice.
        for _ in 0..<2 where findings.contains(where: { $0.invariant == nil }) {
            (_, findings) = await check.run(naive) { _ in "" }
        }
        let excused: Set<Invariant> = [.singleFlight, .noReuse, .revocationFinal, .sessionKept]
        #expect(!findings.contains { $0.invariant.map(excused.contains) ?? false }, "\(findings)")
        #expect(
            findings.contains { $0.invariant == .monotonic && $0.summary.contains("did not happen") }, "\(findings)")
    }
}
