import Foundation

/// The Mann–Whitney U test (Wilcoxon rank-sum test), two-sided: whether values from one run
/// tend to be larger or smaller than values from another, with no assumption about their
/// distribution. Each value is one repeat's figure (a p50, a throughput), so the samples are
/// independent runs, not the correlated calls inside one run.
///
/// The p-value is exact: the permutation distribution of the rank sum, counted over every way
/// of splitting the pooled values into the two groups, ties given their mid-rank (the
/// distribution is then conditional on the ties). Above `exactLimit` pooled values it is the
/// normal approximation with the tie correction and a continuity correction, as in
/// Google Benchmark's `compare.py` (SciPy's `mannwhitneyu`, `method="asymptotic"`).
public enum MannWhitneyU {
    public struct Outcome: Sendable, Hashable, Codable {
        /// U of the first sample: how many (first, second) pairs have the first larger, ties
        /// counting a half.
        public var u: Double
        /// Two-sided p-value: the chance of a rank sum at least this far from its mean if both
        /// samples came from one distribution.
        public var p: Double
        /// `exact` or `normal approximation`.
        public var method: String
    }

    /// Pooled sizes up to this get the exact distribution.
    public static let exactLimit = 30

    /// The test of `first` against `second`; `nil` when either is empty.
    public static func test(_ first: [Double], _ second: [Double]) -> Outcome? {
        let m = first.count
        let n = second.count
        guard m > 0, n > 0 else { return nil }
        let ranks = midRanks(first + second)
        // Doubled ranks are whole numbers even with ties.
        let doubled = ranks.map { Int(($0 * 2).rounded()) }
        let observed = doubled[..<m].reduce(0, +)
        let u = Double(observed) / 2 - Double(m * (m + 1)) / 2
        if m + n <= exactLimit {
            return Outcome(u: u, p: exactP(doubled: doubled, m: m, observed: observed), method: "exact")
        }
        return Outcome(u: u, p: normalP(ranks: ranks, m: m, n: n, u: u), method: "normal approximation")
    }

    /// The smallest two-sided p-value samples of these sizes can reach (no ties, complete
    /// separation), by the same method the test uses for them (exact, or the normal
    /// approximation above `exactLimit`): above `alpha`, no difference can be found at all.
    public static func smallestP(_ m: Int, _ n: Int) -> Double {
        guard m > 0, n > 0 else { return 1 }
        let low = (0..<m).map(Double.init)
        let high = (m..<(m + n)).map(Double.init)
        return test(low, high)?.p ?? 1
    }

    /// 1-based ranks, ties sharing the mean of the ranks they span.
    static func midRanks(_ values: [Double]) -> [Double] {
        let order = values.indices.sorted { values[$0] < values[$1] }
        var ranks = [Double](repeating: 0, count: values.count)
        var start = 0
        while start < order.count {
            var end = start
            while end + 1 < order.count, values[order[end + 1]] == values[order[start]] { end += 1 }
            let rank = Double(start + end + 2) / 2
            for position in start...end { ranks[order[position]] = rank }
            start = end + 1
        }
        return ranks
    }

    /// P(|W − E[W]| ≥ |observed − E[W]|) over every choice of `m` of the pooled (doubled)
    /// ranks, counted by dynamic programming: ways[k][s] is the number of ways to choose `k`
    /// ranks that sum to `s`.
    private static func exactP(doubled: [Int], m: Int, observed: Int) -> Double {
        let total = doubled.reduce(0, +)
        var ways = [[Double]](repeating: [Double](repeating: 0, count: total + 1), count: m + 1)
        ways[0][0] = 1
        for rank in doubled {
            for k in stride(from: m, through: 1, by: -1) {
                for sum in stride(from: total, through: rank, by: -1) where ways[k - 1][sum - rank] > 0 {
                    ways[k][sum] += ways[k - 1][sum - rank]
                }
            }
        }
        let all = ways[m].reduce(0, +)
        // E[W] doubled: m × (N + 1), with N pooled values; compared in doubled units.
        let mean = Double(m) * Double(doubled.count + 1)
        let distance = abs(Double(observed) - mean)
        var extreme = 0.0
        for (sum, count) in ways[m].enumerated() where count > 0 {
            // A hair of tolerance: sums are whole numbers, so this never admits a nearer one.
            if abs(Double(sum) - mean) >= distance - 1e-9 { extreme += count }
        }
        return min(1, extreme / all)
    }

    private static func normalP(ranks: [Double], m: Int, n: Int, u: Double) -> Double {
        let pooled = Double(m + n)
        var tieTerm = 0.0
        for count in Dictionary(grouping: ranks, by: { $0 }).values.map(\.count) where count > 1 {
            let t = Double(count)
            tieTerm += t * t * t - t
        }
        let variance = Double(m * n) / 12 * ((pooled + 1) - tieTerm / (pooled * (pooled - 1)))
        guard variance > 0 else { return 1 }
        let mean = Double(m * n) / 2
        let z = max(0, abs(u - mean) - 0.5) / variance.squareRoot()
        return min(1, erfc(z / 2.0.squareRoot()))
    }
}
