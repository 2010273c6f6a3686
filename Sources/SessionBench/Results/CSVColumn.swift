import Foundation
import SessionMeasurement
import SessionOracle

/// Where a CSV row's fields come from: a result and one operation's latencies (`nil` when nothing was
/// measured, e.g. a crashed store).
struct CSVRow {
    let result: ScenarioResult
    let latency: LatencySummary?

    /// A sync-read row counts the synchronous loop's calls, time and callers.
    var sync: SyncReadFigures? { latency?.kind.besideThreads == true ? result.syncRead : nil }
    var spread: ThroughputSpread? {
        sync != nil ? sync?.callerSpread : (latency?.kind == .read ? result.callerSpread : nil)
    }

    func latency(_ figure: (LatencySummary) -> UInt64) -> String { latency.map { "\(figure($0))" } ?? "" }
}

/// One CSV column: its name, what it holds (one Markdown line: docs/csv.md's column table is generated
/// from it) and how a row fills it. The shared columns are placed in `ResultsReport.csvTable`; a
/// scenario family's own figures come with the family (``ScenarioFamily/columns``).
struct CSVColumn: Sendable {
    let name: String
    let meaning: String
    let value: @Sendable (CSVRow) -> String

    init(_ name: String, _ meaning: String, value: @escaping @Sendable (CSVRow) -> String) {
        self.name = name
        self.meaning = meaning
        self.value = value
    }

    /// A metric's column: its name, meaning and figure for the row's operation (``Metric``).
    init(_ metric: Metric) {
        self.init(metric.name, metric.meaning) { row in
            CSVColumn.optional(
                metric.figure(MetricSource(result: row.result, operation: row.latency?.kind)), metric.decimals)
        }
    }

    /// `value` with `decimals` decimals.
    static func number(_ value: Double, _ decimals: Int) -> String { String(format: "%.\(decimals)f", value) }

    /// `value` with `decimals` decimals, or an empty field where there is none: never a zero
    /// standing in for nothing.
    static func optional(_ value: Double?, _ decimals: Int) -> String { value.map { number($0, decimals) } ?? "" }

    /// A count, or an empty field where there is none.
    static func count(_ value: Int?) -> String { value.map { "\($0)" } ?? "" }
}
