/// A figure that baselines compare and the exports carry, per store × scenario: the scenario's
/// headline operation's p50 and p99, the steady scenarios' throughput, allocations per call
/// and refreshes per expiry.
public struct BenchmarkMetric: Sendable, Hashable, Codable {
    public enum Better: String, Sendable, Hashable, Codable {
        case smaller, bigger
    }

    /// `read p50`, `calls/s`, `allocs/op`, `refreshes/expiry`.
    public var name: String
    /// `ns`, `calls/s`, `allocs/op`, `refreshes/expiry`.
    public var unit: String
    public var better: Better

    public init(name: String, unit: String, better: Better) {
        self.name = name
        self.unit = unit
        self.better = better
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
    /// The figures this run gives each metric; a metric the run did not measure is absent,
    /// never zero.
    public var benchmarkFigures: [(metric: BenchmarkMetric, value: Double)] {
        var figures: [(BenchmarkMetric, Double)] = []
        if let latency = headlineLatency, latency.count > 0 {
            let operation = latency.kind.rawValue
            figures.append((BenchmarkMetric(name: "\(operation) p50", unit: "ns", better: .smaller), Double(latency.p50)))
            figures.append((BenchmarkMetric(name: "\(operation) p99", unit: "ns", better: .smaller), Double(latency.p99)))
        }
        if kind == .steadyReads, operations > 0, seconds > 0 {
            figures.append((BenchmarkMetric(name: "calls/s", unit: "calls/s", better: .bigger), throughput))
        }
        if let allocations = allocationsPerOperation {
            figures.append((BenchmarkMetric(name: "allocs/op", unit: "allocs/op", better: .smaller), allocations))
        }
        if let refreshes = refreshesPerExpiry {
            figures.append(
                (BenchmarkMetric(name: "refreshes/expiry", unit: "refreshes/expiry", better: .smaller), refreshes))
        }
        return figures
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
        for run in runs where run.verdict == .pass {
            for (metric, value) in run.benchmarkFigures where value.isFinite {
                if values[metric] == nil { order.append(metric) }
                values[metric, default: []].append(value)
            }
        }
        return order.map { ($0, values[$0]!) }
    }

    /// The worst verdict among the runs: a failure in any repeat is the group's.
    public var verdict: ScenarioResult.Verdict {
        let order: [ScenarioResult.Verdict] = [.crashed, .hung, .error, .violated, .notRun, .pass]
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
