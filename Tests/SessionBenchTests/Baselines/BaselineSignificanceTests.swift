import Foundation
import SessionBench
import SessionContract
import SessionStores
import Testing

/// A correct store whose every read does `work` of busy waiting on top of a `MutexStore`:
/// the same store with more work is a slower build of it.
final class BusyStore: SessionStore, @unchecked Sendable {
    // SAFETY: `inner` is thread-safe and `work` is immutable.
    private let inner: MutexStore
    private let work: Duration

    init(configuration: SessionStoreConfiguration, work: Duration) {
        inner = MutexStore(configuration: configuration)
        self.work = work
    }

    func validToken() async throws(SessionError) -> AccessToken {
        let token = try await inner.validToken()
        let clock = ContinuousClock()
        let until = clock.now + work
        while clock.now < until {}
        return token
    }
    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        try await inner.tokenRejected(token)
    }
    func signIn(_ credentials: Credentials) async throws(SessionError) { try await inner.signIn(credentials) }
    func signOut() async { await inner.signOut() }

    static func descriptor(work: Duration) -> StoreDescriptor {
        StoreDescriptor(name: "busy", summary: "reads with a fixed amount of work", isReferenceBroken: false) {
            BusyStore(configuration: $0, work: work)
        }
    }
}

/// The baseline comparison on real measurements: a build made 30% slower is a significant
/// regression, and running the same build again is not, over several trials.
///
/// Each trial measures three builds of one store five times each — the baseline, the same
/// build again, and a build whose reads do 30% more work — in turns, so that whatever else the
/// machine is doing lands on all three alike (as `compare --repeats` rotates its stores).
@Suite("Baseline significance", .serialized, .inProcessTurn, .timeLimit(.minutes(5)))
struct BaselineSignificanceTests {
    /// Large beside everything else a read costs (the lock, the harness; several microseconds
    /// under ThreadSanitizer), so that 30% more of it is nearly 30% more in all.
    static let work = Duration.microseconds(20)
    static let repeats = BaselineComparison.defaultRepeats
    static let trials = 3

    static func steady() throws -> Scenario {
        var scenario = try ScenarioCatalog.named("steady-reads")
        scenario.tasks = 1
        scenario.duration = .milliseconds(100)
        return scenario
    }

    @Test("a 30% slowdown is flagged and a rerun of the same build is not, in every trial")
    func slowdownFlaggedRerunNot() async throws {
        let scenario = try Self.steady()
        let runner = ScenarioRunner(hangTimeout: TestEnvironment.hangTimeout)
        let builds = [
            BusyStore.descriptor(work: Self.work), BusyStore.descriptor(work: Self.work),
            BusyStore.descriptor(work: Self.work * 1.3),
        ]
        for trial in 0..<Self.trials {
            var runs: [[ScenarioResult]] = [[], [], []]
            for pass in 0..<Self.repeats {
                for offset in 0..<3 {
                    let build = (offset + pass + trial) % 3
                    var result = await runner.run(builds[build], scenario)
                    result.repeatIndex = pass
                    #expect(result.verdict == .pass, "\(result.violations)")
                    runs[build].append(result)
                }
            }
            let metadata = RunMetadata.current(command: "compare")
            let baseline = ResultsReport(results: runs[0], metadata: metadata)
            let rerun = ResultsReport(results: runs[1], metadata: metadata)
            let slower = ResultsReport(results: runs[2], metadata: metadata)
            #expect(BaselineConditions.check(baseline: baseline, current: rerun).refusals.isEmpty)

            let same = BaselineComparison(
                baseline: baseline, current: rerun, name: "trial \(trial)", alpha: BaselineComparison.defaultAlpha,
                noiseThreshold: BaselineComparison.defaultNoiseThreshold)
            #expect(same.changes.count >= 3, "p50, p99 and calls/s are compared")
            #expect(same.changes.allSatisfy { $0.verdict != .untested })
            #expect(
                same.regressions.isEmpty && same.improvements.isEmpty,
                "trial \(trial): the same build flagged: \(same.table())")

            let slowed = BaselineComparison(
                baseline: baseline, current: slower, name: "trial \(trial)", alpha: BaselineComparison.defaultAlpha,
                noiseThreshold: BaselineComparison.defaultNoiseThreshold)
            let p50 = try #require(slowed.changes.first { $0.metric == "read p50" })
            #expect(p50.verdict == .regression, "trial \(trial): \(slowed.table())")
            #expect((p50.change ?? 0) > 0.15, "the measured slowdown is most of the 30% added")
            #expect(p50.p <= BaselineComparison.defaultAlpha)
            // Per read: calls/s over a 100 ms run also counts the time the thread was off the CPU,
            // which beside the other suites (under ThreadSanitizer above all) can land on one
            // build's five runs; a read's latency does not.
            #expect(
                !slowed.improvements.contains { $0.metric.hasPrefix("read ") },
                "a slower build never reads faster: \(slowed.table())")
        }
    }
}
