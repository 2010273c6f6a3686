import Foundation
import SessionMeasurement
import SessionOracle

/// A figure of a run that the tool gates, compares with baselines and exports: one entry of
/// ``Metric/all`` each. The entry is the figure's whole description — its name (the CSV column and
/// the thresholds file's `metric`), unit, which way is better, whether it is an exact count or a
/// timing, what it means, how it is read from a result, and how baselines and exports name it — and
/// the CSV (`ResultsReport.csvTable`), the gate (`ThresholdCheck`), baselines and exports
/// (`ScenarioResult.benchmarkFigures`) and the documentation's table (docs/gate.md) all read it from
/// here. A new gateable figure is one entry plus its measurement in ``ScenarioResult``.
public struct Metric: Sendable, Hashable, CustomStringConvertible {
    public enum Better: String, Sendable, Hashable, Codable {
        case smaller, bigger
    }

    /// What a limit may do with a figure.
    public enum Nature: Sendable, Hashable {
        /// An exact count: bounded absolutely (`max`, `min`) or by a ratio.
        case count
        /// An exact count that an allocation counter produced: held only to limits set with the same
        /// counter.
        case allocationCount
        /// A rate measured against the clock: only ratios to figures of the same run.
        case rate
        /// A latency of one operation kind: only ratios, also to the harness's own cost per sample.
        case latency
    }

    /// How baselines and exports carry a figure.
    public struct Benchmark: Sendable {
        /// The figure's name in a baseline or an export for `result` (`read p50`, `calls/s`); `nil`
        /// where the run's figure is not compared.
        let label: @Sendable (ScenarioResult) -> String?
        /// Bencher's measure slug (`latency`, `throughput`, …).
        let bencherMeasure: String
    }

    /// The CSV column and the thresholds file's `metric`: `p50_ns`.
    public let name: String
    /// `ns`, `calls/s`, `allocs/op`.
    public let unit: String
    public let better: Better
    public let nature: Nature
    /// One Markdown line: the CSV column table and the gate's metric table (docs/) print it.
    public let meaning: String
    /// Decimals in the CSV.
    let decimals: Int
    /// The figure, or `nil` where the run did not measure it: never a zero standing in for nothing.
    let figure: @Sendable (MetricSource) -> Double?
    /// `nil` for a figure baselines and exports leave out.
    let benchmark: Benchmark?

    init(
        _ name: String, unit: String, better: Better, _ nature: Nature, decimals: Int, benchmark: Benchmark? = nil,
        meaning: String, figure: @escaping @Sendable (MetricSource) -> Double?
    ) {
        self.name = name
        self.unit = unit
        self.better = better
        self.nature = nature
        self.decimals = decimals
        self.benchmark = benchmark
        self.meaning = meaning
        self.figure = figure
    }

    public var description: String { name }

    public static func == (lhs: Metric, rhs: Metric) -> Bool { lhs.name == rhs.name }
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }

    /// Exact counts may be bounded absolutely; timings only by ratios.
    public var isCount: Bool { nature == .count || nature == .allocationCount }
    /// Figures an allocation counter produced: comparable only with the same counter's.
    public var isAllocationFigure: Bool { nature == .allocationCount }
    public var isLatency: Bool { nature == .latency }

    /// This metric of `result`: of `operation` where it names one (an operation named but not measured
    /// is not measured: never another operation's figure), else of the scenario's headline operation.
    public func value(in result: ScenarioResult, operation: OperationKind?) -> Double? {
        let source = MetricSource(result: result, operation: operation)
        // A limit that names an operation the store does not have reads "not measured", whatever
        // the figure: a run's counts are not figures of an operation it never ran.
        guard source.operationMeasured else { return nil }
        return figure(source)
    }

    /// The entry named `name`, as a thresholds file names it.
    public static func named(_ name: String) -> Metric? { all.first { $0.name == name } }
}

/// What a figure is read from: one result, and the operation asked about.
public struct MetricSource: Sendable {
    public let result: ScenarioResult
    /// `nil`: the scenario's headline operation.
    public let operation: OperationKind?

    /// The latencies of the operation asked about.
    var latency: LatencySummary? {
        guard let operation else { return result.headlineLatency }
        return result.latencies.first { $0.kind == operation }
    }

    /// Whether the run measured the operation asked about (always, when none is named).
    var operationMeasured: Bool {
        guard let operation else { return true }
        if operation == .syncRead, result.syncRead == nil { return false }
        return result.latencies.contains { $0.kind == operation }
    }

    /// The synchronous loop's figures, when the operation asked about ran beside it (`sync-read`,
    /// `sync-write`).
    var sync: SyncReadFigures? { operation?.besideThreads == true ? result.syncRead : nil }

    /// `value`, where the operation asked about ran beside the async loop (whose figures the counts
    /// are): `nil` on `sync-read` and `sync-write`.
    func async(_ value: Double?) -> Double? { operation?.besideThreads == true ? nil : value }
}

extension Metric {
    /// Every metric, in the order messages and documentation list them (and baselines and exports
    /// carry them).
    public static let all: [Metric] = [
        .p50, .p90, .p99, .p999, .max, .mean, .throughput, .allocsPerOp, .allocBytesPerOp, .refreshCalls,
        .refreshesPerExpiry, .waitersPerRefresh, .storeBytesPerWaiter, .storeAllocsPerWaiter,
    ]

    static func latency(
        _ name: String, _ meaning: String, label: String? = nil, bencher: String? = nil, decimals: Int = 0,
        _ figure: @escaping @Sendable (LatencySummary) -> Double
    ) -> Metric {
        let benchmark = label.map { label in
            Benchmark(
                label: { result in
                    result.headlineLatency.flatMap { $0.count > 0 ? "\($0.kind.rawValue) \(label)" : nil }
                }, bencherMeasure: bencher ?? "latency-\(label)")
        }
        return Metric(
            name, unit: "ns", better: .smaller, .latency, decimals: decimals, benchmark: benchmark, meaning: meaning,
            figure: { $0.latency.map(figure) })
    }

    public static let p50 = latency(
        "p50_ns", "latency of this operation kind in nanoseconds (HdrHistogram, 3 significant digits): the median",
        label: "p50", bencher: "latency"
    ) { Double($0.p50) }
    public static let p90 = latency("p90_ns", "latency of this operation kind in nanoseconds: the 90th percentile") {
        Double($0.p90)
    }
    public static let p99 = latency(
        "p99_ns", "latency of this operation kind in nanoseconds: the 99th percentile", label: "p99"
    ) { Double($0.p99) }
    public static let p999 = latency(
        "p999_ns", "latency of this operation kind in nanoseconds: the 99.9th percentile"
    ) { Double($0.p999) }
    public static let max = latency("max_ns", "latency of this operation kind in nanoseconds: the largest") {
        Double($0.max)
    }
    public static let mean = latency(
        "mean_ns", "latency of this operation kind in nanoseconds: the mean", decimals: 1
    ) { $0.mean }

    public static let throughput = Metric(
        "throughput_ops_per_s", unit: "calls/s", better: .bigger, .rate, decimals: 1,
        benchmark: Benchmark(
            label: { $0.kind == .steadyReads && $0.seconds > 0 ? "calls/s" : nil }, bencherMeasure: "throughput"),
        meaning: "`operations / seconds`; empty when no call was served",
        figure: { source in
            if source.operation?.besideThreads == true {
                return source.sync.flatMap { $0.operations > 0 ? $0.throughput : nil }
            }
            return source.result.operations > 0 ? source.result.throughput : nil
        })

    public static let refreshCalls = Metric(
        "refresh_calls", unit: "calls", better: .smaller, .count, decimals: 0,
        meaning: "refresh calls the server received", figure: { Double($0.result.refreshCalls) })

    public static let refreshesPerExpiry = Metric(
        "refreshes_per_expiry", unit: "refreshes/expiry", better: .smaller, .count, decimals: 3,
        benchmark: Benchmark(
            label: { $0.refreshesPerExpiry == nil ? nil : "refreshes/expiry" }, bencherMeasure: "refreshes-per-expiry"),
        meaning: "refresh calls made by storms ÷ storms: `1.000` for a single-flight store",
        figure: { $0.result.refreshesPerExpiry })

    public static let waitersPerRefresh = Metric(
        "waiters_per_refresh", unit: "callers/refresh", better: .bigger, .count, decimals: 2,
        meaning: "storm callers ÷ storm refresh calls (the coalescing factor)",
        figure: { $0.result.waitersPerRefresh })

    // The allocation counts are the async loop's: a sync-read row leaves them empty.
    public static let allocsPerOp = Metric(
        "allocs_per_op", unit: "allocs/op", better: .smaller, .allocationCount, decimals: 4,
        benchmark: Benchmark(
            label: { $0.allocationsPerOperation == nil ? nil : "allocs/op" }, bencherMeasure: "allocations-per-op"),
        meaning: """
            heap allocations per call of the async loop (steady scenarios; empty on `sync-read` rows and where not \
            counted)
            """,
        figure: { $0.async($0.result.allocationsPerOperation) })

    public static let allocBytesPerOp = Metric(
        "alloc_bytes_per_op", unit: "bytes/op", better: .smaller, .allocationCount, decimals: 2,
        meaning: """
            heap bytes per call of the async loop, where `allocs_per_op` has a figure; bytes as \
            `allocation_counter` measures them: requested bytes (`interposer`) or size-class bytes (`jemalloc`)
            """,
        figure: { $0.async($0.result.allocatedBytesPerOperation) })

    public static let storeBytesPerWaiter = Metric(
        "store_bytes_per_waiter", unit: "bytes/waiter", better: .smaller, .allocationCount, decimals: 1,
        meaning: "`scale-storm`: live heap bytes per parked caller that the store holds, beyond the caller's own cost",
        figure: { $0.result.storeBytesPerWaiter })

    public static let storeAllocsPerWaiter = Metric(
        "store_allocs_per_waiter", unit: "allocs/waiter", better: .smaller, .allocationCount, decimals: 3,
        meaning: """
            `scale-storm`: heap allocations per waiting caller made by the store (its waiter record, continuation, \
            share of the one refresh), beyond the caller's own
            """,
        figure: { $0.result.storeAllocationsPerWaiter })
}
