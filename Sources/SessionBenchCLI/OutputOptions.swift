import ArgumentParser
import Foundation
import SessionBench

/// Where and how results are written.
struct OutputOptions: ParsableArguments {
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case table, csv, json, markdown
    }

    @Option(name: .long, help: "Output format: \(Format.allCases.map(\.rawValue).joined(separator: ", ")).")
    var format: Format = .table

    @Option(
        name: .long,
        help: "Write to this file (atomically) instead of standard output; repeat for several. A .csv, .json or .md file gets that format, any other --format.")
    var output: [String] = []

    @Flag(name: .long, help: "No progress lines on standard error.")
    var quiet = false

    func validate() throws {
        for path in output { try AtomicFile.checkWritable(path) }
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

/// Writes a whole file or nothing: a temporary file beside the target, then a rename.
enum AtomicFile {
    /// Fails (with the reason and a fix) unless `path` can be written.
    static func checkWritable(_ path: String) throws {
        let url = URL(fileURLWithPath: path)
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw ValidationError("--output '\(path)' is a directory; give a file path")
        }
        let directory = url.deletingLastPathComponent().path
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ValidationError("--output '\(path)': directory '\(directory)' does not exist; create it first")
        }
        // Creating a file is the only check that is sure (root passes access(2) on /proc).
        let probe = URL(fileURLWithPath: directory).appendingPathComponent(".session-bench-probe-\(getpid())").path
        let descriptor = open(probe, O_CREAT | O_EXCL | O_WRONLY, 0o600)
        guard descriptor >= 0 else {
            throw ValidationError(
                "--output '\(path)': cannot create files in '\(directory)' (\(String(cString: strerror(errno)))); choose another path")
        }
        close(descriptor)
        unlink(probe)
    }

    static func write(_ text: String, to path: String) throws {
        let url = URL(fileURLWithPath: path)
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).\(getpid()).tmp")
        do {
            try Data(text.utf8).write(to: temporary)
            guard rename(temporary.path, url.path) == 0 else {
                throw UsageError("cannot write '\(path)': \(String(cString: strerror(errno)))")
            }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw UsageError("cannot write '\(path)': \(error)")
        }
    }
}

extension OutputOptions {
    /// Renders `report` in the chosen format to `--output` (atomically) or standard output.
    /// With `--output`, the table still goes to standard output for the person watching.
    func emit(_ report: ResultsReport, table: (ResultsReport) -> String = { $0.table() }) throws {
        func render(_ format: Format) throws -> String {
            switch format {
            case .table: table(report)
            case .csv: report.csv()
            case .json: try report.json()
            case .markdown: report.markdown()
            }
        }
        if !output.isEmpty {
            for path in output {
                try AtomicFile.write(try render(format(for: path)), to: path)
                if !quiet { Log.progress("wrote \(format(for: path).rawValue) to \(path)") }
            }
            print(table(report), terminator: "")
        } else {
            let text = try render(format)
            // By byte: "\r\n" is one Character, so hasSuffix("\n") misses CSV's line ends.
            print(text, terminator: text.utf8.last == UInt8(ascii: "\n") ? "" : "\n")
        }
    }
}
