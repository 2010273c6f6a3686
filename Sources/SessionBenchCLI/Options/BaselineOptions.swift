import ArgumentParser
import Foundation
import SessionBench

/// `compare`'s repeats and baselines: save this run under a name, or compare it with a saved
/// one and fail on a significant regression.
struct BaselineOptions: ParsableArguments {
    @Option(
        name: .long,
        help: """
            Passes over every store and scenario, 1 to 1000, store order rotated each pass (default: 1; 5 with \
            --baseline or --save-baseline).
            """,
        transform: ArgumentText.whole(InputRange.repeats))
    var repeats: Int?

    @Option(
        name: .customLong("save-baseline"),
        help: ArgumentHelp(
            "Save this run as a baseline: a name (kept in \(Baselines.directory)/NAME.json) or a .json file.",
            discussion: "A name is letters, digits, '.', '_' and '-'; an existing baseline of that name is replaced."))
    var saveBaseline: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Compare with a saved baseline: its name, or a .json file that compare wrote (--output x.json).",
            discussion: """
                Each store × scenario figure (the headline operation's p50 and p99, calls/s, allocs/op, refreshes \
                per expiry) is tested with a two-sided Mann–Whitney U test over the repeats of both runs; a change \
                counts when p ≤ --alpha and the medians differ by more than --noise-threshold and by more than \
                either run's spread over its repeats. Exit status 3 when a figure regressed (and every invariant \
                held). A baseline run on another machine, processor or \
                core count, with another allocator, allocation counter, transport or isolation, or with \
                other tasks, duration, rounds, seed or faults in a scenario, is refused (exit 2) and the \
                message says what differs.
                """))
    var baseline: String?

    @Option(
        name: .long, help: "Significance level of the Mann–Whitney U test, 0.0001 to 0.5 (default: 0.01).",
        transform: ArgumentText.probability(0.0001...0.5))
    var alpha: Double?

    @Option(
        name: .customLong("noise-threshold"),
        help: "Smallest change of a median that counts, in percent, 0 to 1000, e.g. 10 (default: 10).",
        transform: ArgumentText.percent(0...1000))
    var noiseThreshold: Double?

    static let defaultRepeats = BaselineComparison.defaultRepeats
    static let defaultAlpha = BaselineComparison.defaultAlpha
    static let defaultNoiseThreshold = BaselineComparison.defaultNoiseThreshold

    var passes: Int { repeats ?? (baseline != nil || saveBaseline != nil ? Self.defaultRepeats : 1) }

    func validate() throws {
        if baseline == nil, alpha != nil || noiseThreshold != nil {
            throw UsageError("--alpha and --noise-threshold apply to --baseline; give the baseline to compare with")
        }
        if let saveBaseline { try Baselines.checkSaveTarget(saveBaseline) }
        if let baseline {
            let (report, _) = try Baselines.load(baseline)
            let theirs = Set(report.results.compactMap(\.repeatIndex)).count
            let smallest = MannWhitneyU.smallestP(max(theirs, 1), passes)
            if smallest > alpha ?? Self.defaultAlpha {
                throw UsageError(
                    "--baseline '\(Printable.name(baseline))' has \(max(theirs, 1)) repeat(s) and this run would have "
                        + "\(passes): the U test cannot reach p ≤ \(InputRange.text(alpha ?? Self.defaultAlpha)) "
                        + "(p ≥ \(String(format: "%.3g", smallest))); give both runs --repeats 5 or more")
            }
        }
    }
}

extension ArgumentText {
    /// A probability within `range`, e.g. 0.05.
    static func probability(_ range: ClosedRange<Double>) -> @Sendable (String) throws -> Double {
        { text in
            guard let value = NumberText.decimal(text) else {
                throw Invalid(description: "give a probability in decimal digits, e.g. 0.05")
            }
            guard range.contains(value) else { throw Invalid(description: "must be \(InputRange.text(range))") }
            return value
        }
    }

    /// A percentage, `10` or `10%`, as a fraction (0.1).
    static func percent(_ range: ClosedRange<Double>) -> @Sendable (String) throws -> Double {
        { text in
            let digits = text.hasSuffix("%") ? String(text.dropLast()) : text
            guard let value = NumberText.decimal(digits) else {
                throw Invalid(description: "give a percentage in decimal digits, e.g. 10 or 10%")
            }
            guard range.contains(value) else {
                throw Invalid(description: "must be \(InputRange.text(range)) percent")
            }
            return value / 100
        }
    }
}

/// Saved baselines: the JSON report of a `compare` run, under `.session-bench/baselines/NAME.json`
/// in the current folder, or any file a `compare --output x.json` wrote.
enum Baselines {
    static let directory = ".session-bench/baselines"

    /// A name, as opposed to a file: no `/`, no `.json` ending.
    static func isName(_ reference: String) -> Bool {
        !reference.contains("/") && !reference.lowercased().hasSuffix(".json")
    }

    static func path(for reference: String) throws(UsageError) -> String {
        guard isName(reference) else { return reference }
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        guard !reference.isEmpty, reference.count <= 100, reference.allSatisfy(allowed.contains),
            !reference.hasPrefix(".")
        else {
            throw UsageError(
                "baseline name '\(Printable.name(reference))': use letters, digits, '.', '_' and '-' (not first), "
                    + "at most 100, or give a .json file")
        }
        return "\(directory)/\(reference).json"
    }

    /// Checks before the run that `--save-baseline` can be written, making nothing: for a
    /// name, the nearest existing folder on the way to the baselines folder must take files.
    static func checkSaveTarget(_ reference: String) throws(UsageError) {
        let file = try path(for: reference)
        var folder = URL(fileURLWithPath: file).deletingLastPathComponent()
        guard isName(reference), !FileManager.default.fileExists(atPath: folder.path) else {
            guard case .replace = try OutputTarget.plan(file, option: "--save-baseline").kind else {
                throw UsageError("--save-baseline '\(Printable.name(file))': give a regular file's path")
            }
            return
        }
        while !FileManager.default.fileExists(atPath: folder.path) { folder.deleteLastPathComponent() }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue,
            access(folder.path, W_OK) == 0
        else {
            throw UsageError(
                "--save-baseline: cannot create '\(directory)' in '\(Printable.name(folder.path))'; run from a folder "
                    + "you can write, or give a .json file")
        }
    }

    /// Where `--save-baseline` writes, the baselines folder made if missing, and the folders made
    /// for it (innermost first): ``removeFolders(_:)`` takes them away again if the save fails.
    static func saveTarget(_ reference: String) throws(UsageError) -> (target: OutputTarget, made: [String]) {
        let file = try path(for: reference)
        var made: [String] = []
        if isName(reference) {
            var folder = directory
            while !folder.isEmpty, !FileManager.default.fileExists(atPath: folder) {
                made.append(folder)
                folder = (folder as NSString).deletingLastPathComponent
            }
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                removeFolders(made)
                throw UsageError(
                    "--save-baseline: cannot create '\(directory)' (\(error.localizedDescription)); "
                        + "run from a folder you can write, or give a .json file")
            }
        }
        do throws(UsageError) {
            let target = try OutputTarget.plan(file, option: "--save-baseline")
            guard case .replace = target.kind else {
                throw UsageError("--save-baseline '\(Printable.name(file))': give a regular file's path")
            }
            return (target, made)
        } catch {
            removeFolders(made)
            throw error
        }
    }

    /// Removes the folders a failed save made, innermost first, each only if it is still empty.
    static func removeFolders(_ made: [String]) {
        for folder in made { rmdir(folder) }
    }

    /// The report saved as `reference`, and how to name it in messages.
    static func load(_ reference: String) throws(UsageError) -> (report: ResultsReport, shownAs: String) {
        let file = try path(for: reference)
        let shown = isName(reference) ? "'\(reference)'" : "'\(Printable.name(reference))'"
        let data: Data
        do throws(InputFile.Refusal) {
            data = try InputFile.read(file, what: "a .json file that compare wrote", limit: 256 << 20)
        } catch {
            if error.isMissing, isName(reference) {
                let saved = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
                    .filter { $0.hasSuffix(".json") }.map { String($0.dropLast(5)) }.sorted()
                throw UsageError(
                    "--baseline \(shown): no such baseline in \(directory)"
                        + (saved.isEmpty ? "" : " (saved: \(saved.joined(separator: ", ")))")
                        + "; save one with compare --save-baseline \(reference)")
            }
            throw UsageError("--baseline \(shown): \(error.problem)")
        }
        // Read strictly first: a key given twice, or a number no figure can be, is named as such.
        let document: JSONValue
        do { document = try StrictJSON.parse(Array(data)) } catch {
            throw UsageError("--baseline \(shown): not valid JSON (\(error))")
        }
        if let path = Self.numberOutOfRange(in: document, at: "") {
            throw UsageError("--baseline \(shown): \(path) holds a number out of range; not a results file compare wrote")
        }
        let report: ResultsReport
        do {
            report = try JSONDecoder().decode(ResultsReport.self, from: data)
        } catch let error as DecodingError {
            throw UsageError("--baseline \(shown): not a session-bench results file (\(Self.describe(error)))")
        } catch {
            throw UsageError("--baseline \(shown): not a session-bench results file")
        }
        guard !report.results.isEmpty else {
            throw UsageError("--baseline \(shown): holds no results; save a baseline from a run with compare --save-baseline")
        }
        return (report, shown)
    }

    /// Where `value` holds a number a double cannot (`1e400`), as a key path; `nil` if nowhere.
    private static func numberOutOfRange(in value: JSONValue, at path: String) -> String? {
        switch value {
        case .number(let text): return Double(text).map(\.isFinite) == true ? nil : (path.isEmpty ? "the top level" : path)
        case .array(let items):
            for (index, item) in items.enumerated() {
                if let found = numberOutOfRange(in: item, at: "\(path)[\(index)]") { return found }
            }
        case .object(let members):
            for member in members {
                if let found = numberOutOfRange(in: member.value, at: path.isEmpty ? member.key : "\(path).\(member.key)") {
                    return found
                }
            }
        default: break
        }
        return nil
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            return keys.isEmpty ? "the top level" : keys.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context): return "missing '\(key.stringValue)' at \(path(context))"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "unexpected value at \(path(context))"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "not valid JSON" : "unreadable value at \(path(context))"
        @unknown default: return "unreadable"
        }
    }
}
