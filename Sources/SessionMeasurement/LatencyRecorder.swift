import Histogram
import SessionOracle

/// Latencies of one worker, one histogram per operation kind, in nanoseconds. Recording
/// touches only this worker's memory; workers' recorders are merged once at the end.
public struct LatencyRecorder: Sendable {
    /// The largest latency tracked exactly; longer ones are clamped to it (and counted).
    public static let highestTrackable: UInt64 = 60_000_000_000

    private(set) var histograms: [OperationKind: Histogram<UInt64>] = [:]

    public init() {}

    public mutating func record(_ kind: OperationKind, nanoseconds: Int64) {
        let value = UInt64(clamping: max(nanoseconds, 1))
        if histograms[kind] == nil { histograms[kind] = Self.emptyHistogram() }
        _ = histograms[kind]!.record(min(value, Self.highestTrackable))
    }

    /// Adds a whole histogram recorded elsewhere (a worker's hot-loop histogram).
    public mutating func add(_ kind: OperationKind, _ histogram: Histogram<UInt64>) {
        if histograms[kind] == nil { histograms[kind] = histogram } else { histograms[kind]!.add(histogram) }
    }

    public var summaries: [LatencySummary] {
        histograms.keys.sorted().map { LatencySummary(kind: $0, histogram: histograms[$0]!) }
    }

    package static func emptyHistogram() -> Histogram<UInt64> {
        Histogram(
            lowestDiscernibleValue: 1, highestTrackableValue: highestTrackable, numberOfSignificantValueDigits: .three)
    }
}

/// Percentiles of one operation kind, in nanoseconds, with the percentile distribution
/// (HdrHistogram's standard form) for charts.
public struct LatencySummary: Sendable, Hashable, Codable {
    public struct Point: Sendable, Hashable, Codable {
        public let percentile: Double
        public let nanoseconds: UInt64
    }

    public let kind: OperationKind
    public let count: UInt64
    public let p50: UInt64
    public let p90: UInt64
    public let p99: UInt64
    public let p999: UInt64
    public let max: UInt64
    public let mean: Double
    public let distribution: [Point]

    package init(kind: OperationKind, histogram: Histogram<UInt64>) {
        self.kind = kind
        count = histogram.totalCount
        p50 = histogram.valueAtPercentile(50)
        p90 = histogram.valueAtPercentile(90)
        p99 = histogram.valueAtPercentile(99)
        p999 = histogram.valueAtPercentile(99.9)
        max = histogram.max
        mean = histogram.mean
        var points: [Point] = []
        for value in histogram.percentiles(ticksPerHalfDistance: 2) {
            let point = Point(percentile: value.percentile, nanoseconds: value.value)
            if points.last != point { points.append(point) }
        }
        distribution = points
    }
}
