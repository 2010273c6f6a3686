import Foundation
import SessionOracle

/// The tables of the documentation that are generated from the code's catalogs, so that the docs
/// say what the tool does: the scenarios (`ScenarioCatalog.presets`), the invariants (`Invariant`),
/// the CSV's columns (`ResultsReport.csvTable`) and the figures the gate, baselines and exports take
/// (`Metric.all`). Each is a Markdown block that docs/ holds
/// between `<!-- generated: NAME -->` and `<!-- end generated -->`; a test compares the two.
public enum DocumentationTables {
    /// Every generated block: the name its markers use, the page that holds it (relative to the
    /// package root), and its text.
    public static let all: [(name: String, page: String, text: @Sendable () -> String)] = [
        ("scenarios", "docs/scenarios.md", scenarios),
        ("invariants", "docs/invariants.md", invariants),
        ("errors", "docs/contract.md", errors),
        ("csv-header", "docs/csv.md", csvHeader),
        ("csv-columns", "docs/csv.md", csvColumns),
        ("table-columns", "docs/csv.md", tableColumns),
        ("metrics", "docs/gate.md", metrics),
    ]

    /// Every named scenario and what happens in it (docs/scenarios.md).
    public static func scenarios() -> String {
        table(
            header: ["name", "what happens"],
            rows: ScenarioCatalog.presets.map { ["`\($0.scenario.name)`", $0.whatHappens] })
    }

    /// Every invariant: its id, its name as reports print it, and how it is checked (docs/invariants.md).
    public static func invariants() -> String {
        table(
            header: ["id", "invariant", "how it is checked"],
            rows: Invariant.allCases.map { [$0.id, $0.name, $0.summary] })
    }

    /// Each error a token request may end in: what it means, and when the contract's judge allows it
    /// (``ErrorRule``) (docs/contract.md).
    public static func errors() -> String {
        table(
            header: ["promise", "check", "exercised by"],
            rows: ErrorRule.all.map { ["`\($0.name)`: \($0.promise)", $0.check, $0.exercisedBy] }
                + [["all waiters of one refresh get the same one", "**I2**", "every storm"]])
    }

    /// The CSV's fixed header line, fenced (docs/csv.md).
    public static func csvHeader() -> String {
        "```\n" + ResultsReport.csvColumns.joined(separator: ",") + "\n```"
    }

    /// Every CSV column, in order, and what it holds (docs/csv.md).
    public static func csvColumns() -> String {
        table(header: ["column", "meaning"], rows: ResultsReport.csvTable.map { ["`\($0.name)`", $0.meaning] })
    }

    /// The terminal and Markdown tables' columns, and the CSV column whose figure each shows
    /// (docs/csv.md).
    public static func tableColumns() -> String {
        table(
            header: ["table", "column", "CSV column"],
            rows: ReportColumns.tables.flatMap { table in table.columns.map { [table.name, $0.header, $0.csv] } })
    }

    /// Every metric a thresholds file may name: its unit, how it may be bounded, which way is better,
    /// and what baselines and exports call it (docs/gate.md).
    public static func metrics() -> String {
        table(
            header: ["metric", "unit", "limits", "better", "baselines and exports", "meaning"],
            rows: Metric.all.map { metric in
                let limits =
                    switch metric.nature {
                    case .count: "`max`, `min`, ratios"
                    case .allocationCount: "`max`, `min`, ratios (same counter only)"
                    case .rate: "ratios only"
                    case .latency: "ratios only (also `harness_overhead_ns`)"
                    }
                let benchmarked = metric.benchmark.map { "yes (`\($0.bencherMeasure)` in Bencher)" } ?? "—"
                return ["`\(metric.name)`", metric.unit, limits, metric.better.rawValue, benchmarked, metric.meaning]
            })
    }

    /// A Markdown table, one line per row; a `|` inside a cell is escaped.
    static func table(header: [String], rows: [[String]]) -> String {
        func line(_ cells: [String]) -> String {
            "| " + cells.map { $0.replacingOccurrences(of: "|", with: "\\|") }.joined(separator: " | ") + " |"
        }
        let separator = "|" + Array(repeating: "---", count: header.count).joined(separator: "|") + "|"
        return ([line(header), separator] + rows.map(line)).joined(separator: "\n")
    }
}
