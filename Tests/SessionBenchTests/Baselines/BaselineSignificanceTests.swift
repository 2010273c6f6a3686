import Foundation
import SessionBench
import SessionMeasurement
import SessionOracle
import Testing
import TokenServer

/// The baseline comparison's verdicts on figures made to order: each repeat is a steady-reads
/// run whose reads took a chosen time, so what the test sees never depends on how busy the
/// machine running it is. The shapes are the ones measured runs show: repeats of one build
/// within a few percent of each other; one repeat that caught a busy neighbour; every repeat
/// of a run slowed together by a loaded machine.
@Suite("Baseline significance")
struct BaselineSignificanceTests {
    static let alpha = BaselineComparison.defaultAlpha
    static let threshold = BaselineComparison.defaultNoiseThreshold

    /// One repeat of `mutex/steady-reads` whose 1,000 reads each took about `nanoseconds`
    /// (±1 ns, so the histogram has a middle), over a run of 0.1 s.
    static func repeatRun(_ nanoseconds: Double, index: Int) throws -> ScenarioResult {
        var result = ScenarioResult(store: "mutex", scenario: try ScenarioCatalog.named("steady-reads"), verdict: .pass)
        var recorder = LatencyRecorder()
        for call in 0..<1_000 { recorder.record(.read, nanoseconds: Int64(nanoseconds.rounded()) + Int64(call % 3) - 1) }
        result.latencies = recorder.summaries
        result.operations = 1_000
        result.seconds = 1_000 * nanoseconds / 1e9
        result.repeatIndex = index
        return result
    }

    static func report(_ figures: [Double]) throws -> ResultsReport {
        ResultsReport(
            results: try figures.enumerated().map { try repeatRun($0.element, index: $0.offset) },
            metadata: .current(command: "compare"))
    }

    static func compare(_ baseline: [Double], _ current: [Double]) throws -> BaselineComparison {
        BaselineComparison(
            baseline: try report(baseline), current: try report(current), name: "made to order", alpha: alpha,
            noiseThreshold: threshold)
    }

    /// Five repeats around `center`, each within ±`jitter` of it, drawn from `random`.
    static func repeats(around center: Double, jitter: Double, _ random: inout SeededRandom) -> [Double] {
        (0..<BaselineComparison.defaultRepeats).map { _ in center * (1 + Double.random(in: -jitter...jitter, using: &random)) }
    }

    @Test("a 30% slowdown is flagged and a rerun of the same build is not, in every trial", arguments: 0..<50)
    func slowdownFlaggedRerunNot(trial: Int) throws {
        var random = SeededRandom(seed: UInt64(trial) &* 0x9E37_79B9_7F4A_7C15 &+ 1)
        let center = Double.random(in: 200...5_000, using: &random)
        let baseline = Self.repeats(around: center, jitter: 0.02, &random)
        let rerun = Self.repeats(around: center, jitter: 0.02, &random)
        let slower = Self.repeats(around: center * 1.3, jitter: 0.02, &random)

        let same = try Self.compare(baseline, rerun)
        #expect(Set(same.changes.map(\.metric)) == ["read p50", "read p99", "calls/s"], "\(same.table())")
        #expect(same.changes.allSatisfy { $0.verdict != .untested })
        #expect(same.regressions.isEmpty && same.improvements.isEmpty, "the same build flagged: \(same.table())")

        let slowed = try Self.compare(baseline, slower)
        let p50 = try #require(slowed.changes.first { $0.metric == "read p50" })
        #expect(p50.verdict == .regression, "\(slowed.table())")
        #expect(p50.p <= Self.alpha)
        #expect(abs((p50.change ?? 0) - 0.3) < 0.06, "the change reported is the one made")
        let calls = try #require(slowed.changes.first { $0.metric == "calls/s" })
        #expect(calls.verdict == .regression, "fewer calls/s is worse: \(slowed.table())")
        #expect(slowed.improvements.isEmpty, "a slower build never reads faster: \(slowed.table())")
    }

    @Test("the same slowdown against the baseline the other way round is an improvement")
    func fasterIsImprovement() throws {
        let comparison = try Self.compare([1_300, 1_310, 1_290, 1_305, 1_295], [1_000, 1_010, 990, 1_005, 995])
        let p50 = try #require(comparison.changes.first { $0.metric == "read p50" })
        #expect(p50.verdict == .improvement)
        #expect(comparison.regressions.isEmpty, "\(comparison.table())")
    }

    @Test("one repeat that caught a busy neighbour does not make the same build a regression")
    func oneSlowRepeatIsNotARegression() throws {
        let comparison = try Self.compare([1_000, 1_010, 990, 1_005, 995], [1_002, 1_008, 3_000, 998, 1_004])
        let p50 = try #require(comparison.changes.first { $0.metric == "read p50" })
        #expect(p50.verdict == .notSignificant, "the repeats overlap: \(comparison.table())")
        #expect(p50.p > Self.alpha)
        #expect(comparison.regressions.isEmpty)
    }

    /// What a loaded machine does to a run: every repeat slower, and far apart from each other.
    /// The test finds the shift; the spread of the run's own repeats says it is not the build's.
    @Test("every repeat slowed by a loaded machine, far apart from each other, is within the noise")
    func loadedRunIsWithinNoise() throws {
        let comparison = try Self.compare([1_000, 1_010, 990, 1_005, 995], [1_300, 2_100, 1_600, 2_600, 1_400])
        let p50 = try #require(comparison.changes.first { $0.metric == "read p50" })
        #expect(p50.p <= Self.alpha, "all five above all five")
        #expect(p50.currentSpread > (p50.change ?? 0), "the run's own spread is larger than the change")
        #expect(p50.verdict == .withinNoise, "\(comparison.table())")
        #expect(comparison.regressions.isEmpty)
    }

    @Test("a significant change smaller than the noise threshold is within the noise, beyond it a regression")
    func thresholdDecides() throws {
        let baseline: [Double] = [1_000, 1_001, 999, 1_002, 998]
        let small = try Self.compare(baseline, baseline.map { $0 * 1.08 })
        #expect(small.changes.first { $0.metric == "read p50" }?.verdict == .withinNoise, "\(small.table())")
        let large = try Self.compare(baseline, baseline.map { $0 * 1.12 })
        #expect(large.changes.first { $0.metric == "read p50" }?.verdict == .regression, "\(large.table())")
    }

    @Test("with three repeats a side no change can reach α 0.01: untested, never flagged")
    func tooFewRepeatsAreUntested() throws {
        let comparison = try Self.compare([1_000, 1_000, 1_000], [5_000, 5_000, 5_000])
        #expect(comparison.changes.allSatisfy { $0.verdict == .untested }, "\(comparison.table())")
        #expect(comparison.regressions.isEmpty)
    }
}
