import ArgumentParser
import Foundation
import SessionBench

/// Where and how results are written.
struct OutputOptions: ParsableArguments {
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case table, csv, json, markdown
    }

    @Option(name: .long, help: "Output format.")
    var format: Format = .table

    @Option(
        name: .long,
        help: ArgumentHelp(
            """
            Also write the results to this file; repeat for several. A .csv, .json or .md file gets that format, \
            any other --format; - writes --format to standard output.
            """,
            discussion: """
                Every file is written whole or not at all: to a temporary file beside it, renamed over it once all \
                outputs are written. An existing file keeps its mode; a symbolic link is followed and the file it \
                points to replaced; a device or FIFO is written directly. The table still goes to standard output \
                unless - is among the outputs.
                """))
    var output: [String] = []

    func validate() throws {
        _ = try targets()
    }

    /// Every `--output`, checked; the same file named twice is refused.
    func targets() throws(UsageError) -> [OutputTarget] {
        var targets: [OutputTarget] = []
        for path in output {
            let target = try OutputTarget.plan(path)
            if let earlier = targets.first(where: { $0.writesSameFile(as: target) }) {
                throw UsageError(
                    "--output '\(Printable.name(path))' names the same file as '\(Printable.name(earlier.path))'; "
                        + "give each output once")
            }
            targets.append(target)
        }
        return targets
    }

    /// The format a file is written in: its extension's, else `--format`.
    func format(for path: String) -> Format {
        switch URL(fileURLWithPath: path).pathExtension.lowercased() {
        case "csv": .csv
        case "json": .json
        case "md": .markdown
        default: format
        }
    }
}

extension OutputOptions {
    /// Renders `report` in the chosen format to `--output` (atomically) or standard output.
    /// With `--output`, the table still goes to standard output for the person watching;
    /// unless `quiet`, a line on standard error names each file written.
    func emit(_ report: ResultsReport, quiet: Bool, table: (ResultsReport) -> String = { $0.table() }) throws {
        func render(_ format: Format) throws -> String {
            switch format {
            case .table: table(report)
            case .csv: report.csv()
            case .json: try report.json()
            case .markdown: report.markdown()
            }
        }
        let targets = try targets()
        var outputs: [(target: OutputTarget, text: String)] = []
        for target in targets {
            outputs.append((target, try render(target.kind == .standardOutput ? format : format(for: target.path))))
        }
        if targets.isEmpty {
            outputs.append((OutputTarget(path: "-", kind: .standardOutput), try render(format)))
        } else if !targets.contains(where: { $0.kind == .standardOutput }) {
            // The person watching still sees the table.
            outputs.append((OutputTarget(path: "-", kind: .standardOutput), table(report)))
        }
        try OutputWriter.write(outputs)
        if !quiet {
            for target in targets where target.kind != .standardOutput {
                Log.progress("wrote \(format(for: target.path).rawValue) to \(Printable.name(target.path))")
            }
        }
    }
}
