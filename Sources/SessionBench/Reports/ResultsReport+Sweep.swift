import Foundation
import SessionMeasurement
import TokenServer

extension ResultsReport {
    /// A sweep's medians: per value, per store, the median over repeats of throughput and
    /// p99, and of the throughput ratio to `baseline` measured at the same point and repeat.
    public func sweepTable(baseline: String?) -> String {
        let points = results.compactMap(\.sweep)
        guard let parameter = points.first?.parameter else { return table() }
        let values = Array(Set(points.map(\.value))).sorted()
        let stores = results.map(\.store).firstSeen()
        let synchronous = results.contains { $0.syncRead != nil }
        let counted = results.contains { $0.allocationsPerOperation != nil }
        var rows = [
            [parameter.rawValue, "store", "verdicts", "calls/s (median)", "max/min", "p99 (median)"]
                + (counted ? ["allocs/op (median)"] : [])
                + (synchronous ? ["sync-read calls/s (median)", "max/min"] : [])
                + (baseline.map { ["× \($0) (median)"] } ?? [])
        ]
        var warnings: [String] = []
        for value in values {
            for store in stores {
                let runs = results.filter { $0.store == store && $0.sweep?.value == value }
                guard !runs.isEmpty else { continue }
                let verdicts = Set(runs.map(\.verdict.rawValue)).sorted().joined(separator: ",")
                let latencies = runs.compactMap { run in
                    run.headlineLatency.flatMap { $0.count > 0 ? Double($0.p99) : nil }
                }
                let valueText = runs.first?.sweep?.valueText ?? NumberText.compact(value)
                let point = "\(store) at \(parameter.rawValue)=\(valueText)"
                var row = [
                    valueText, store, verdicts, Format.rate(Self.median(runs.map(\.throughput))),
                    Self.spread(runs.map(\.throughput), point: point, operation: "read", warnings: &warnings),
                    // No served call, no latency: a dash, never a 0 that reads as "fast".
                    latencies.isEmpty ? "—" : Format.nanoseconds(Self.median(latencies)),
                ]
                if counted {
                    let allocations = runs.compactMap(\.allocationsPerOperation)
                    row.append(allocations.isEmpty ? "n/a" : String(format: "%.2f", Self.median(allocations)))
                }
                if synchronous {
                    let sync = runs.compactMap { $0.syncRead?.throughput }
                    row += [
                        sync.isEmpty ? "—" : Format.rate(Self.median(sync)),
                        Self.spread(sync, point: point, operation: "sync-read", warnings: &warnings),
                    ]
                }
                if let baseline {
                    let ratios = runs.compactMap { run -> Double? in
                        guard let base = results.first(where: { $0.store == baseline && $0.sweep == run.sweep }),
                            base.throughput > 0
                        else { return nil }
                        return run.throughput / base.throughput
                    }
                    row.append(ratios.isEmpty ? "—" : String(format: "%.2f", Self.median(ratios)))
                }
                rows.append(row)
            }
        }
        if counted, Set(results.compactMap(\.allocationCounter)).count > 1 {
            warnings.append(
                "allocs/op comes from different counters at different points (\(Self.allocationCounting(of: results))): "
                    + "call counts agree between them; bytes do not (requested bytes against size classes)")
        }
        return Format.aligned(rows) + "\n" + problems(markdown: false) + warnings.map { "warning: \($0)\n" }.joined()
            + notes().map { "note: \($0)\n" }.joined()
    }

    /// Repeats whose fastest is more than this many times their slowest are called out: the
    /// median of such a point hides two machines, or a store with two speeds.
    public static let repeatSpreadWarning = 1.3

    /// The fastest repeat over the slowest, as `1.08`; a warning beyond ``repeatSpreadWarning``.
    static func spread(_ rates: [Double], point: String, operation: String, warnings: inout [String]) -> String {
        guard rates.count > 1, let low = rates.min(), let high = rates.max() else { return "—" }
        guard low > 0 else {
            warnings.append("\(point): a repeat of \(operation) served no call; its median is not a figure to quote")
            return "∞"
        }
        let ratio = high / low
        if ratio > repeatSpreadWarning {
            warnings.append(
                "\(point): \(operation) repeats differ \(String(format: "%.2f", ratio))× (fastest/slowest of \(rates.count)); "
                    + "the machine was busy or the store has two speeds: try more --repeats, or --cpus to pin the run")
        }
        return String(format: "%.2f", ratio)
    }

    static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        return sorted.count % 2 == 1
            ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}
