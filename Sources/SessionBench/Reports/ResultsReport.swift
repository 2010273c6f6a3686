import Foundation

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
            allocationCounting: "", sampleClock: SampleClock.shared.summary)
    }
}

/// Results in every output format: a terminal table, CSV, JSON and Markdown.
public struct ResultsReport: Sendable, Codable {
    public static let toolVersion = "0.1.0"
    /// Bumped whenever a CSV column is added, removed, renamed or changes meaning.
    public static let csvSchemaVersion = 9

    public var schemaVersion = ResultsReport.csvSchemaVersion
    public var metadata: RunMetadata
    public var results: [ScenarioResult]

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
                    : "jemalloc arena statistics (mallctl, thread cache off; size-class bytes)"
                parts.append("\(what) on the \(allocators.map(\.rawValue).joined(separator: " and ")) allocator")
            }
            return parts.joined(separator: "; ") + ", in the measuring processes"
        }
        let reasons = results.compactMap(\.allocationNote).filter { $0 != ScenarioRunner.roundAllocationNote }
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
