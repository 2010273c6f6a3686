/// A figure that baselines compare and the exports carry, per store × scenario: the scenario's
/// headline operation's p50 and p99, the steady scenarios' throughput, allocations per call
/// and refreshes per expiry.
public struct BenchmarkMetric: Sendable, Hashable, Codable {
    public typealias Better = Metric.Better

    /// `read p50`, `calls/s`, `allocs/op`, `refreshes/expiry`.
    public var name: String
    /// `ns`, `calls/s`, `allocs/op`, `refreshes/expiry`.
    public var unit: String
    public var better: Better
    /// Bencher's measure slug: `latency`, `throughput`, `allocations-per-op`.
    public var bencherMeasure: String

    public init(name: String, unit: String, better: Better, bencherMeasure: String) {
        self.name = name
        self.unit = unit
        self.better = better
        self.bencherMeasure = bencherMeasure
    }
}

/// Which runs are repeats of one another: the same store, scenario and (in a sweep) point.
public struct BenchmarkKey: Sendable, Hashable, Codable {
    public var store: String
    public var scenario: String
    /// `tasks=8` in a sweep; `nil` outside one.
    public var point: String?

    public init(_ result: ScenarioResult) {
        store = result.store
        scenario = result.scenario
        point = result.sweep.map { "\($0.parameter.rawValue)=\($0.valueText)" }
    }

    /// `mutex/steady-reads`, `mutex/steady-reads/tasks=8`: a name for charts and reports.
    public var path: String { [store, scenario, point].compactMap { $0 }.joined(separator: "/") }
}

extension ScenarioResult {
    /// The figures this run gives each metric that baselines and exports carry (``Metric/all``'s
    /// entries with a `benchmark`); a metric the run did not measure is absent, never zero.
    public var benchmarkFigures: [(metric: BenchmarkMetric, value: Double)] {
        Metric.all.compactMap { metric in
            guard let benchmark = metric.benchmark, let label = benchmark.label(self),
                let value = metric.value(in: self, operation: nil)
            else { return nil }
            return (
                BenchmarkMetric(
                    name: label, unit: metric.unit, better: metric.better, bencherMeasure: benchmark.bencherMeasure),
                value
            )
        }
    }
}

/// Results grouped by `BenchmarkKey`, repeats together, in the order the keys first appear.
public struct BenchmarkGroup: Sendable {
    public var key: BenchmarkKey
    public var runs: [ScenarioResult]

    public static func grouping(_ results: [ScenarioResult]) -> [BenchmarkGroup] {
        var groups: [BenchmarkGroup] = []
        var index: [BenchmarkKey: Int] = [:]
        for result in results {
            let key = BenchmarkKey(result)
            if let at = index[key] {
                groups[at].runs.append(result)
            } else {
                index[key] = groups.count
                groups.append(BenchmarkGroup(key: key, runs: [result]))
            }
        }
        return groups
    }

    /// Every metric any run measured, in first-seen order, with each run's value (runs that
    /// did not pass are left out: their figures measure a failure, not the store).
    public var samples: [(metric: BenchmarkMetric, values: [Double])] {
        var order: [BenchmarkMetric] = []
        var values: [BenchmarkMetric: [Double]] = [:]
        for run in runs where run.verdict.passes {
            for (metric, value) in run.benchmarkFigures where value.isFinite {
                if values[metric] == nil { order.append(metric) }
                values[metric, default: []].append(value)
            }
        }
        return order.map { ($0, values[$0]!) }
    }

    /// The worst verdict among the runs: a failure in any repeat is the group's.
    public var verdict: ScenarioResult.Verdict {
        let order: [ScenarioResult.Verdict] = [.crashed, .hung, .error, .violated, .notRun, .known, .pass]
        return order.first { verdict in runs.contains { $0.verdict == verdict } } ?? .pass
    }
}

public enum Median {
    /// The middle of `values` (the mean of the two middle ones for an even count); `nil` for none.
    public static func of(_ values: [Double]) -> Double? {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return nil }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
}
