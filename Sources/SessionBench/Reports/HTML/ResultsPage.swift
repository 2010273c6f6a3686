import Foundation
import SessionOracle

/// Several saved reports (the JSON `compare`, `sweep` and `stress` write) on one page: each
/// report's charts and tables under its own heading, and the machine they ran on at the end.
/// `results/reproduce` writes the reference runs' page this way (`session-bench report`).
public enum ResultsPage {
    public static func html(_ reports: [(name: String, report: ResultsReport)], title: String) -> String {
        var page = HTMLPage(title: title)
        for (name, report) in reports {
            let view = report.shown()
            page.heading(name, id: HTMLPage.anchor(name, taken: []))
            page.paragraph(
                "session-bench \(report.metadata.command), \(report.metadata.date): \(view.results.count) run(s) of "
                    + "\(Set(view.results.map(\.store)).count) store(s) × \(view.scenarioNames.count) scenario(s)")
            let failed = view.results.filter { !$0.verdict.passes }
            if !failed.isEmpty {
                page.paragraph(
                    "Did not pass (each with its events in the report's JSON and Markdown):", className: "label")
                page.list(
                    failed.map { result in
                        "\(result.store) × \(result.scenario): \(ResultsReport.verdictText(result))"
                            + (result.violations.first.map { " — \($0.summary)" } ?? "")
                    })
            }
            for chart in report.charts(prefix: HTMLPage.anchor(name, taken: [])) { page.chart(chart) }
            if report.results.contains(where: { $0.sweep != nil }) {
                page.preformatted(report.sweepTable(baseline: nil).split(separator: "\n").map(String.init))
            } else {
                for block in view.blocks() {
                    let title = block.title.map { "\($0) — \(block.heading)" } ?? block.heading
                    page.heading(
                        title, level: 3, id: "\(HTMLPage.anchor(name, taken: []))-\(HTMLPage.anchor(title, taken: []))")
                    page.table(block.header, block.rows)
                }
            }
        }
        if let first = reports.first?.report {
            page.heading("The machine", id: "machine")
            page.facts(first.metadata.facts)
        }
        return page.render(subtitle: "\(reports.count) saved run(s)")
    }
}

extension ResultsReport {
    /// The charts, each id prefixed (`compare-latency-steady-reads`) so charts of several reports
    /// can share a folder.
    public func charts(prefix: String) -> [SVGChart] {
        charts().map { chart in
            SVGChart(
                id: "\(prefix)-\(chart.id)", title: chart.title, caption: chart.caption, svg: chart.svg,
                header: chart.header, rows: chart.rows)
        }
    }
}
