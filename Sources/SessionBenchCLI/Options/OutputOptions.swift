import ArgumentParser
import Foundation
import SessionBench

/// Where and how results are written.
struct OutputOptions: ParsableArguments {
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case table, csv, json, markdown
        /// JUnit XML: a test case per store × scenario × invariant.
        case junit
        /// Bencher Metric Format JSON.
        case bencher
        /// github-action-benchmark's custom JSON, `customSmallerIsBetter` and `customBiggerIsBetter`.
        case githubSmaller = "github-smaller"
        case githubBigger = "github-bigger"
        /// One self-contained page: charts drawn inline, each violation with its events and replay.
        case html

        /// The four formats every report has (the exports need a run's results).
        static let reports: [Format] = [.table, .csv, .json, .markdown]
    }

    @Option(
        name: .long,
        help: "Output format: \(Format.allCases.map(\.rawValue).joined(separator: ", ")).")
    var format: Format = .table

    @Option(
        name: .long,
        help: ArgumentHelp(
            """
            Also write the results to this file; repeat for several. A .csv, .json, .md, .html or .xml (JUnit) \
            file gets that format, any other --format; FORMAT:PATH names the format, e.g. junit:report.xml, \
            bencher:bmf.json, github-smaller:latency.json; - writes --format to standard output.
            """,
            discussion: """
                Every file is written whole or not at all: to a temporary file beside it, renamed over it once all \
                outputs are written. An existing file keeps its mode; a symbolic link is followed and the file it \
                points to replaced; a device or FIFO is written directly. The table still goes to standard output \
                unless - is among the outputs. A path that itself begins with a format's name and a colon is \
                written as ./PATH.
                """))
    var output: [String] = []

    @Option(
        name: .customLong("append-output"),
        help: ArgumentHelp(
            "Append the Markdown report to this file, e.g. \"$GITHUB_STEP_SUMMARY\"; repeat for several.",
            discussion: """
                The text is added in one write after every other output is written; if that write fails, the file \
                is cut back to its old length. The file must exist or its folder must.
                """))
    var appendOutput: [String] = []

    func validate() throws {
        _ = try targets()
        _ = try appendTargets()
    }

    /// An `--output` value: its file and the format it gets.
    struct Destination {
        var target: OutputTarget
        var format: Format
    }

    /// Every `--output`, checked; the same file named twice is refused.
    func targets() throws(UsageError) -> [OutputTarget] { try destinations().map(\.target) }

    /// Every `--output` with its format: the FORMAT: prefix's, else the extension's, else `--format`.
    func destinations() throws(UsageError) -> [Destination] {
        var destinations: [Destination] = []
        for value in output {
            let (named, path) = Self.split(value)
            let target = try OutputTarget.plan(path)
            if let earlier = destinations.first(where: { $0.target.writesSameFile(as: target) }) {
                throw UsageError(
                    "--output '\(Printable.name(path))' names the same file as '\(Printable.name(earlier.target.path))'; "
                        + "give each output once")
            }
            let format = named ?? (target.kind == .standardOutput ? format : format(for: path))
            destinations.append(Destination(target: target, format: format))
        }
        return destinations
    }

    /// `junit:report.xml` → (.junit, `report.xml`); a value with no format's name before a
    /// colon is all path.
    static func split(_ value: String) -> (Format?, String) {
        guard let colon = value.firstIndex(of: ":"), let format = Format(rawValue: String(value[..<colon])) else {
            return (nil, value)
        }
        return (format, String(value[value.index(after: colon)...]))
    }

    /// The format a file is written in: its extension's, else `--format`.
    func format(for path: String) -> Format {
        switch URL(fileURLWithPath: path).pathExtension.lowercased() {
        case "csv": .csv
        case "json": .json
        case "md": .markdown
        case "xml": .junit
        case "html", "htm": .html
        default: format
        }
    }

    /// Every `--append-output`, checked: a regular file (or a new one in a folder that exists),
    /// a character device or a FIFO.
    func appendTargets() throws(UsageError) -> [OutputTarget] {
        var targets: [OutputTarget] = []
        for path in appendOutput {
            guard path != "-" else {
                throw UsageError("--append-output needs a file; use --output - for standard output")
            }
            let target: OutputTarget
            var info = stat()
            if !path.isEmpty, stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG {
                // An existing file is only added to: its links, mode and folder do not matter,
                // only that it can be written.
                guard access(path, W_OK) == 0 else {
                    throw UsageError(
                        "--append-output '\(Printable.name(path))': cannot be written "
                            + "(\(String(cString: strerror(errno))))")
                }
                target = OutputTarget(path: path, kind: .direct)
            } else {
                target = try OutputTarget.plan(path, option: "--append-output")
            }
            if let earlier = (try destinations().map(\.target) + targets).first(where: { $0.writesSameFile(as: target) }
            ) {
                throw UsageError(
                    "--append-output '\(Printable.name(path))' names the same file as '\(Printable.name(earlier.path))'; "
                        + "give each output once")
            }
            targets.append(target)
        }
        return targets
    }
}

extension OutputOptions {
    /// Renders `report` in the chosen format to `--output` (atomically) or standard output,
    /// and its Markdown for every `--append-output`, with `also` (a saved baseline) in the same
    /// all-or-none write. With `--output`, the table still goes to standard output for the
    /// person watching; unless `quiet`, a line on standard error names each file written.
    func emit(
        _ report: ResultsReport, quiet: Bool, also: [(target: OutputTarget, text: String)] = [],
        table: (ResultsReport) -> String = { $0.table() }, rerun: (ScenarioResult) -> String? = { _ in nil }
    ) throws {
        func render(_ format: Format) throws -> String {
            switch format {
            case .table: table(report)
            case .csv: report.csv()
            case .json: try report.json()
            case .markdown: report.markdown()
            case .junit: report.junit()
            case .bencher: try report.bencherMetrics()
            case .githubSmaller: try report.githubBenchmark(.smaller)
            case .githubBigger: try report.githubBenchmark(.bigger)
            case .html: report.html(rerun: rerun)
            }
        }
        let destinations = try destinations()
        var outputs: [(target: OutputTarget, text: String)] = []
        for destination in destinations {
            outputs.append((destination.target, try render(destination.format)))
        }
        if destinations.isEmpty {
            outputs.append((OutputWriter.standardOutput, try render(format)))
        } else if !destinations.contains(where: { $0.target.kind == .standardOutput }) {
            // The person watching still sees the table.
            outputs.append((OutputWriter.standardOutput, table(report)))
        }
        let appended = try appendTargets()
        let markdown = appended.isEmpty ? "" : report.markdown()
        try OutputWriter.write(outputs + also, appending: appended.map { ($0, markdown) })
        if !quiet {
            for destination in destinations where destination.target.kind != .standardOutput {
                Log.progress("wrote \(destination.format.rawValue) to \(Printable.name(destination.target.path))")
            }
            for target in appended { Log.progress("appended markdown to \(Printable.name(target.path))") }
        }
    }

    /// Every file this run writes, with the option that names it: for checks that no two are one.
    func namedTargets() throws(UsageError) -> [(option: String, target: OutputTarget)] {
        try targets().map { ("--output", $0) } + appendTargets().map { ("--append-output", $0) }
    }
}

/// Refuses two outputs that are one file, and an output that is a file the run reads.
enum OutputOverlap {
    static func check(
        outputs: [(option: String, target: OutputTarget)], inputs: [(option: String, path: String)] = []
    ) throws(UsageError) {
        for (index, output) in outputs.enumerated() where output.target.kind != .standardOutput {
            if let earlier = outputs[..<index].first(where: { $0.target.writesSameFile(as: output.target) }) {
                throw UsageError(
                    "\(output.option) '\(Printable.name(output.target.path))' names the same file as "
                        + "\(earlier.option) '\(Printable.name(earlier.target.path))'; give each output once")
            }
            let asRead = OutputTarget(path: output.target.path, kind: .direct)
            if let input = inputs.first(where: { asRead.writesSameFile(as: OutputTarget(path: $0.path, kind: .direct)) }
            ) {
                throw UsageError(
                    "\(output.option) '\(Printable.name(output.target.path))' names the same file as "
                        + "\(input.option) '\(Printable.name(input.path))', which this run reads; write elsewhere")
            }
        }
    }
}
