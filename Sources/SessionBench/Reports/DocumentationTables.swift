import Foundation

/// The tables of the documentation that are generated from the code's catalogs, so that the docs
/// say what the tool does: the scenarios (`ScenarioCatalog.presets`), the invariants (`Invariant`)
/// and the CSV's columns (`ResultsReport.csvTable`). Each is a Markdown block that docs/ holds
/// between `<!-- generated: NAME -->` and `<!-- end generated -->`; a test compares the two.
public enum DocumentationTables {
    /// Every generated block: the name its markers use, and its text.
    public static let all: [(name: String, text: @Sendable () -> String)] = [
        ("scenarios", scenarios),
        ("invariants", invariants),
        ("csv-header", csvHeader),
        ("csv-columns", csvColumns),
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

    /// The CSV's fixed header line, fenced (docs/csv.md).
    public static func csvHeader() -> String {
        "```\n" + ResultsReport.csvColumns.joined(separator: ",") + "\n```"
    }

    /// Every CSV column, in order, and what it holds (docs/csv.md).
    public static func csvColumns() -> String {
        table(header: ["column", "meaning"], rows: ResultsReport.csvTable.map { ["`\($0.name)`", $0.meaning] })
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
