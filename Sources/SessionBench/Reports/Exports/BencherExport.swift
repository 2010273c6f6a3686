import Foundation

/// Bencher Metric Format (BMF) JSON: `{benchmark: {measure: {value, lower_value, upper_value}}}`.
/// A benchmark is a store × scenario (`mutex/steady-reads`); its measures are Bencher's
/// built-in `latency` (the headline operation's p50, in ns) and `throughput` (calls/s), and
/// `latency-p99`, `allocations-per-op` and `refreshes-per-expiry`, which Bencher creates on first
/// sight. `value` is the median over repeats; `lower_value` and `upper_value` the smallest
/// and largest repeat. Store × scenarios with a run that did not pass are left out.
extension ResultsReport {
    public func bencherMetrics() throws -> String {
        var benchmarks: [String: [String: [String: Double]]] = [:]
        for group in BenchmarkGroup.grouping(results) where group.verdict.passes {
            var measures: [String: [String: Double]] = [:]
            for (metric, values) in group.samples {
                guard let value = Median.of(values) else { continue }
                var figure = ["value": value]
                if values.count > 1 {
                    figure["lower_value"] = values.min()!
                    figure["upper_value"] = values.max()!
                }
                measures[metric.bencherMeasure] = figure
            }
            if !measures.isEmpty { benchmarks[group.key.path] = measures }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(benchmarks), as: UTF8.self) + "\n"
    }
}
