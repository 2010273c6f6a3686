/// Every figure of a run against the same figure in a saved baseline: the change of the
/// medians over repeats, and whether it is beyond the noise. A change counts when the
/// Mann–Whitney U test over the repeats finds it (p ≤ `alpha`) **and** it is larger than both
/// `noiseThreshold` and the spread the repeats of either run show on their own (largest less
/// smallest, over the median). Two runs of one build on a shared machine differ for reasons
/// the code has nothing to do with — another tenant, a figure with two modes — and the test
/// alone, asked about hundreds of figures, finds some of them; a change smaller than the
/// figure's own spread from repeat to repeat is not one a build can be blamed for.
public struct BaselineComparison: Sendable, Codable {
    public enum Verdict: String, Sendable, Codable {
        /// Significant and beyond the threshold, the worse way.
        case regression
        /// Significant and beyond the threshold, the better way.
        case improvement
        /// Significant, but within the threshold or the repeats' own spread.
        case withinNoise = "within-noise"
        case notSignificant = "not-significant"
        /// Not tested: too few repeats on a side to reach `alpha` at all.
        case untested
    }

    public struct Change: Sendable, Codable {
        public var store: String
        public var scenario: String
        public var point: String?
        public var metric: String
        public var unit: String
        public var better: BenchmarkMetric.Better
        public var baselineMedian: Double
        public var currentMedian: Double
        /// The current median over the baseline's, minus 1 (+0.3 is 30% higher); `nil` when the
        /// baseline's median is 0.
        public var change: Double?
        /// The test's two-sided p-value.
        public var p: Double
        /// Each run's spread over its repeats: (largest − smallest) / median.
        public var baselineSpread: Double
        public var currentSpread: Double
        public var baselineRepeats: Int
        public var currentRepeats: Int
        public var verdict: Verdict

        /// `mutex/steady-reads`.
        public var path: String { [store, scenario, point].compactMap { $0 }.joined(separator: "/") }
    }

    /// The baseline as given: its name or file.
    public var baseline: String
    /// When the baseline was run.
    public var baselineDate: String
    public var test =
        "Mann–Whitney U, two-sided, over repeats (exact permutation distribution up to \(MannWhitneyU.exactLimit) "
        + "runs in all, else the normal approximation)"
    public var alpha: Double
    /// As a fraction: 0.1 is ±10%.
    public var noiseThreshold: Double
    public var changes: [Change] = []
    /// Store × scenario runs with figures only in this run or only in the baseline; and what
    /// was not compared: a run that failed (a verdict that does not pass: ``ScenarioResult/Verdict/passes``), or a figure one run
    /// measured and the other did not (allocations with no counter).
    public var onlyNow: [String] = []
    public var onlyInBaseline: [String] = []
    public var notCompared: [String] = []
    /// What differs between the runs without making them incomparable (the kernel release).
    public var notes: [String] = []

    public init(
        baseline: ResultsReport, current: ResultsReport, name: String, alpha: Double, noiseThreshold: Double
    ) {
        self.baseline = name
        baselineDate = baseline.metadata.date
        self.alpha = alpha
        self.noiseThreshold = noiseThreshold
        let before = BenchmarkGroup.grouping(baseline.results)
        let now = BenchmarkGroup.grouping(current.results)
        let beforeByKey = Dictionary(before.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        let nowKeys = Set(now.map(\.key))
        onlyInBaseline = before.filter { !nowKeys.contains($0.key) }.map(\.key.path)
        for group in now {
            guard let old = beforeByKey[group.key] else {
                onlyNow.append(group.key.path)
                continue
            }
            guard group.verdict.passes, old.verdict.passes else {
                let which = group.verdict.passes ? "" : "this run: \(group.verdict.rawValue)"
                let was = old.verdict.passes ? "" : "baseline: \(old.verdict.rawValue)"
                notCompared.append("\(group.key.path) (\([which, was].filter { !$0.isEmpty }.joined(separator: ", ")))")
                continue
            }
            let oldSamples = Dictionary(old.samples.map { ($0.metric, $0.values) }, uniquingKeysWith: { $1 })
            let newSamples = group.samples
            for (metric, values) in newSamples {
                guard let oldValues = oldSamples[metric], !oldValues.isEmpty else {
                    notCompared.append("\(group.key.path) \(metric.name) (not in the baseline)")
                    continue
                }
                changes.append(judge(group.key, metric, baseline: oldValues, current: values))
            }
            for (metric, _) in old.samples where !newSamples.contains(where: { $0.metric == metric }) {
                notCompared.append("\(group.key.path) \(metric.name) (not measured in this run)")
            }
        }
    }

    private func judge(
        _ key: BenchmarkKey, _ metric: BenchmarkMetric, baseline: [Double], current: [Double]
    ) -> Change {
        let before = Median.of(baseline) ?? 0
        let after = Median.of(current) ?? 0
        let change: Double? = before != 0 ? after / before - 1 : (after == 0 ? 0 : nil)
        let p = MannWhitneyU.test(current, baseline)?.p ?? 1
        let verdict: Verdict
        if MannWhitneyU.smallestP(current.count, baseline.count) > alpha {
            verdict = .untested
        } else if p > alpha {
            verdict = .notSignificant
        } else if let change, abs(change) <= max(noiseThreshold, spread(baseline), spread(current)) {
            verdict = .withinNoise
        } else {
            let higher = after > before
            verdict = higher == (metric.better == .smaller) ? .regression : .improvement
        }
        return Change(
            store: key.store, scenario: key.scenario, point: key.point, metric: metric.name, unit: metric.unit,
            better: metric.better, baselineMedian: before, currentMedian: after, change: change, p: p,
            baselineSpread: spread(baseline), currentSpread: spread(current), baselineRepeats: baseline.count,
            currentRepeats: current.count, verdict: verdict)
    }

    /// (largest − smallest) / median; 0 for one value or a median of 0.
    private func spread(_ values: [Double]) -> Double {
        guard let middle = Median.of(values), middle != 0, let low = values.min(), let high = values.max() else {
            return 0
        }
        return (high - low) / abs(middle)
    }

    /// `compare`'s defaults: 5 repeats a side, α 0.01 (with 5 and 5, only two runs that do not
    /// overlap at all reach it: p = 2/252), and changes within 10% are noise.
    public static let defaultRepeats = 5
    public static let defaultAlpha = 0.01
    public static let defaultNoiseThreshold = 0.10

    public var regressions: [Change] { changes.filter { $0.verdict == .regression } }
    public var improvements: [Change] { changes.filter { $0.verdict == .improvement } }

    /// How many figures had each verdict.
    public func count(_ verdict: Verdict) -> Int { changes.count(where: { $0.verdict == verdict }) }
}
