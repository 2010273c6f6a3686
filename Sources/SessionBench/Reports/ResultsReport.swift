import Foundation
import SessionMeasurement

/// What a run was, for the record beside its results.
public struct RunMetadata: Sendable, Codable {
    public var tool: String
    public var command: String
    public var date: String
    public var cores: Int
    public var system: String
    public var allocationCounting: String
    /// The sample clock: which one, its bracket cost, and why it was chosen.
    public var sampleClock: String?
    /// The processor's model name (`/proc/cpuinfo`), when the system says.
    public var cpuModel: String?
    /// `isolated` (a measuring process per store) or `in-process`; `nil` when not recorded.
    public var execution: String?
    /// How stores reached the token server: `in-process` or `http`; `nil` when not recorded.
    public var transport: String?
    /// `compare --repeats`: passes over every store; `nil` for one.
    public var repeats: Int?
    /// `compare`'s systematic search: what it ran, and the stores × scenarios it could not
    /// explore, one line each; `nil` when none ran.
    public var exploration: [String]?
    /// The commit of the tool's source, where it is known: `SESSION_BENCH_COMMIT`, else the git
    /// checkout the executable was built in; `nil` otherwise.
    public var commit: String?

    public static func current(command: String) -> RunMetadata {
        let formatter = ISO8601DateFormatter()
        var uts = utsname()
        uname(&uts)
        let system =
            withUnsafeBytes(of: &uts.sysname) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) } + " "
            + withUnsafeBytes(of: &uts.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) } + " "
            + withUnsafeBytes(of: &uts.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return RunMetadata(
            tool: "session-bench \(ResultsReport.toolVersion)", command: command, date: formatter.string(from: Date()),
            cores: ProcessInfo.processInfo.activeProcessorCount, system: system,
            allocationCounting: "", sampleClock: SampleClock.shared.summary, cpuModel: cpuModel(),
            commit: sourceCommit())
    }

    /// `SESSION_BENCH_COMMIT` if set, else the commit checked out in the git repository that holds
    /// the executable (a `swift build` in a clone), read from its files: no process is started.
    static func sourceCommit() -> String? {
        if let given = ProcessInfo.processInfo.environment["SESSION_BENCH_COMMIT"], !given.isEmpty { return given }
        let executable = URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath()
        var directory = executable.deletingLastPathComponent()
        while directory.path != "/" {
            let dotGit = directory.appendingPathComponent(".git")
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: dotGit.path, isDirectory: &isDirectory) {
                // A worktree's `.git` is a file naming its git directory.
                if !isDirectory.boolValue {
                    guard let text = try? String(contentsOf: dotGit, encoding: .utf8), text.hasPrefix("gitdir: ") else {
                        return nil
                    }
                    let path = text.dropFirst("gitdir: ".count).trimmingCharacters(in: .whitespacesAndNewlines)
                    return commit(in: URL(fileURLWithPath: path, relativeTo: directory).standardizedFileURL)
                }
                return commit(in: dotGit)
            }
            directory.deleteLastPathComponent()
        }
        return nil
    }

    /// The commit `HEAD` names in the git directory `git`, shortened to 12 digits.
    static func commit(in git: URL) -> String? {
        func read(_ path: String) -> String? {
            (try? String(contentsOf: git.appendingPathComponent(path), encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        guard let head = read("HEAD") else { return nil }
        var hash = head
        if head.hasPrefix("ref: ") {
            let reference = String(head.dropFirst("ref: ".count))
            // A worktree keeps its refs in the common git directory.
            let common = read("commondir").map { git.appendingPathComponent($0).standardizedFileURL } ?? git
            func readCommon(_ path: String) -> String? {
                (try? String(contentsOf: common.appendingPathComponent(path), encoding: .utf8))?
                    .trimmingCharacters(in: .whitespacesAndNewlines)
            }
            guard
                let resolved = read(reference) ?? readCommon(reference)
                    ?? readCommon("packed-refs")?.split(separator: "\n").first(where: { $0.hasSuffix(" \(reference)") })
                    .map({ String($0.prefix { $0 != " " }) })
            else { return nil }
            hash = resolved
        }
        guard hash.count >= 12, hash.allSatisfy(\.isHexDigit) else { return nil }
        return String(hash.prefix(12))
    }

    /// The first `model name` in `/proc/cpuinfo` (Linux on x86), else its `CPU implementer`
    /// and `CPU part` (Linux on Arm), else `nil`.
    static func cpuModel() -> String? {
        guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return nil }
        func field(_ name: String) -> String? {
            for line in text.split(separator: "\n") where line.hasPrefix(name) {
                guard let colon = line.firstIndex(of: ":") else { continue }
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                if !value.isEmpty { return value }
            }
            return nil
        }
        if let model = field("model name") { return model }
        if let implementer = field("CPU implementer"), let part = field("CPU part") {
            return "implementer \(implementer) part \(part)"
        }
        return nil
    }
}

/// Results in every output format: a terminal table, CSV, JSON and Markdown.
public struct ResultsReport: Sendable, Codable {
    public static let toolVersion = "0.1.0"
    /// Bumped whenever a CSV column is added, removed, renamed or changes meaning
    /// (``ScenarioResult/schemaVersion``, kept beside the figures it versions).
    public static let csvSchemaVersion = ScenarioResult.schemaVersion

    public var schemaVersion = ResultsReport.csvSchemaVersion
    public var metadata: RunMetadata
    public var results: [ScenarioResult]
    /// `compare --baseline`: every figure's change against the baseline, with its test.
    public var comparison: BaselineComparison?
    /// `--expect FILE`: the file, and its expectations that did not happen.
    public var expectations: ExpectationsOutcome?

    public struct ExpectationsOutcome: Sendable, Codable {
        public var file: String
        public var stale: [Expectations.Stale]

        public init(file: String, stale: [Expectations.Stale]) {
            self.file = file
            self.stale = stale
        }
    }

    public init(results: [ScenarioResult], metadata: RunMetadata) {
        self.results = results
        self.metadata = metadata
        self.metadata.allocationCounting = Self.allocationCounting(of: results)
    }

    /// What counted these results' allocations, and on which allocator, from the results
    /// themselves: a run in which nothing could count says so, never names a counter that was
    /// not there.
    static func allocationCounting(of results: [ScenarioResult]) -> String {
        let counted = results.filter { $0.allocationCounter != nil }
        if !counted.isEmpty {
            var parts: [String] = []
            for counter in AllocationCounterKind.allCases {
                let allocators = AllocatorKind.allCases.filter { allocator in
                    counted.contains { $0.allocationCounter == counter && $0.allocator == allocator }
                }
                guard !allocators.isEmpty else { continue }
                let what =
                    counter == .interposer
                    ? "the malloc interposer (calls and requested bytes)"
                    : "jemalloc's allocation hooks and arena statistics (mallctl, thread cache off; size-class bytes)"
                parts.append("\(what) on the \(allocators.map(\.rawValue).joined(separator: " and ")) allocator")
            }
            return parts.joined(separator: "; ") + ", in the measuring processes"
        }
        let reasons = results.compactMap(\.allocationNote).filter { $0 != StormFamily.allocationNote }
        if let reason = reasons.first { return "none: \(reason)" }
        return "none: no steady scenario or scale storm ran (allocations are counted there)"
    }

    // MARK: JSON

    /// Everything, histograms' percentile distributions included.
    public func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return String(decoding: try encoder.encode(self), as: UTF8.self) + "\n"
    }
}
