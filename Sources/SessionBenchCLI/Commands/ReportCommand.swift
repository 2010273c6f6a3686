import ArgumentParser
import Foundation
import SessionBench

/// `session-bench report`: saved results (the JSON `compare`, `sweep` and `stress` write) drawn
/// as one HTML page, and each chart as an SVG file, with no other tool.
struct Report: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Draw saved JSON results as one self-contained HTML page, and each chart as an SVG file.",
        discussion: """
            Each file is one --output ….json of compare, sweep or stress; the page shows each under its file's \
            name, charts first. results/reproduce makes results/report.html and results/charts/ this way.
            """)

    @Argument(help: "JSON reports to draw, in page order.")
    var files: [String] = []

    @Option(name: .long, help: "The HTML page to write (.html).")
    var output: String

    @Option(name: .long, help: "Also write every chart to this existing folder as NAME-CHART.svg.")
    var charts: String?

    @Option(name: .long, help: "The page's title.")
    var title = "session-bench results"

    func validate() throws {
        guard !files.isEmpty else { throw UsageError("give at least one JSON report (compare --output run.json)") }
        let page = try OutputTarget.html(output)
        try OutputOverlap.check(outputs: [("--output", page)], inputs: files.map { ("report", $0) })
        if let charts {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: charts, isDirectory: &isDirectory), isDirectory.boolValue
            else {
                throw UsageError("--charts '\(Printable.name(charts))' is not a folder; create it first")
            }
        }
    }

    func run() throws {
        var reports: [(name: String, report: ResultsReport)] = []
        let decoder = JSONDecoder()
        for file in files {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw UsageError("report '\(Printable.name(file))': cannot be read; give a JSON file compare wrote")
            }
            do {
                let report = try decoder.decode(ResultsReport.self, from: data)
                guard report.schemaVersion == ResultsReport.csvSchemaVersion else {
                    throw UsageError(
                        "report '\(Printable.name(file))' has schema \(report.schemaVersion), this tool reads "
                            + "\(ResultsReport.csvSchemaVersion); run it again with this session-bench")
                }
                let name = URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent
                reports.append((name, report))
            } catch let error as UsageError {
                throw error
            } catch {
                throw UsageError(
                    "report '\(Printable.name(file))' is not a session-bench JSON report (\(Self.reason(error))); "
                        + "give a file written by compare --output FILE.json")
            }
        }
        var outputs = [(try OutputTarget.html(output), ResultsPage.html(reports, title: title))]
        if let charts {
            for (name, report) in reports {
                for chart in report.charts(prefix: HTMLPage.anchor(name, taken: [])) {
                    let path = URL(fileURLWithPath: charts).appendingPathComponent("\(chart.id).svg").path
                    outputs.append((try OutputTarget.plan(path), chart.standalone))
                }
            }
        }
        try OutputWriter.write(outputs)
        Log.progress("wrote \(output)" + (charts.map { " and \(outputs.count - 1) chart(s) to \($0)" } ?? ""))
    }

    /// What a decoding error says, in a few words.
    static func reason(_ error: Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "no '\(key.stringValue)'"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context),
            DecodingError.dataCorrupted(let context):
            context.codingPath.map(\.stringValue).joined(separator: ".").isEmpty
                ? "not JSON" : "bad '\(context.codingPath.map(\.stringValue).joined(separator: "."))'"
        default: "unreadable"
        }
    }
}
