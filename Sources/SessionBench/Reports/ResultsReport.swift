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
        let system = withUnsafeBytes(of: &uts.sysname) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) } + " "
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
    public static let csvSchemaVersion = 6

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
                let what = counter == .interposer ? "the malloc interposer (calls and requested bytes)"
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

    // MARK: CSV

    /// The fixed CSV header; the README documents each column.
    public static let csvColumns = [
        "schema_version", "store", "scenario", "kind", "sweep_parameter", "sweep_value", "repeat", "operation", "verdict", "violated_invariants", "tasks", "seed",
        "operations", "failed_calls", "unissued_calls", "seconds", "throughput_ops_per_s", "samples", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns",
        "mean_ns", "refresh_calls", "storms", "refreshes_per_expiry", "waiters_per_refresh", "allocs_per_op",
        "alloc_bytes_per_op", "cpu_seconds", "peak_rss_bytes", "harness_overhead_ns", "bare_loop_ops_per_s",
        "empty_store_ops_per_s", "store_bytes_per_waiter", "caller_bytes_per_waiter", "clock_anomalies",
        "caller_min_ops_per_s", "caller_median_ops_per_s", "caller_max_ops_per_s", "plain_load_ops_per_s", "sync_threads",
        "sync_misses", "cpus", "allocator", "allocation_counter", "store_allocs_per_waiter", "caller_allocs_per_waiter",
    ]

    /// RFC 4180: one row per store × scenario × operation kind (a row with an empty
    /// operation when nothing was measured, e.g. a crashed store).
    public func csv() -> String {
        var lines = [Self.csvColumns.joined(separator: ",")]
        for result in results {
            let kinds: [LatencySummary?] = result.latencies.isEmpty ? [nil] : result.latencies
            for latency in kinds {
                // A sync-read row counts the synchronous loop's calls, time and callers.
                let sync = latency?.kind == .syncRead ? result.syncRead : nil
                let operations = sync?.operations ?? result.operations
                let seconds = sync?.seconds ?? result.seconds
                let throughput = sync?.throughput ?? result.throughput
                let spread = sync != nil ? sync?.callerSpread : (latency?.kind == .read ? result.callerSpread : nil)
                let fields: [String] = [
                    "\(Self.csvSchemaVersion)", result.store, result.scenario, result.kind.rawValue,
                    result.sweep?.parameter.rawValue ?? "", result.sweep?.valueText ?? "",
                    result.sweep.map { String($0.repeatIndex) } ?? "", latency?.kind.rawValue ?? "", result.verdict.rawValue,
                    result.violations.map { "I\($0.invariant.rawValue)" }.joined(separator: " "),
                    "\(result.tasks)", "\(result.seed)", "\(operations)", sync == nil ? "\(result.failedCalls)" : "0",
                    sync == nil ? result.unissuedCalls.map { "\($0)" } ?? "" : "", Self.number(seconds, 6),
                    Self.number(throughput, 1), latency.map { "\($0.count)" } ?? "",
                    latency.map { "\($0.p50)" } ?? "", latency.map { "\($0.p90)" } ?? "",
                    latency.map { "\($0.p99)" } ?? "", latency.map { "\($0.p999)" } ?? "",
                    latency.map { "\($0.max)" } ?? "", latency.map { Self.number($0.mean, 1) } ?? "",
                    "\(result.refreshCalls)", "\(result.storms)", result.refreshesPerExpiry.map { Self.number($0, 3) } ?? "",
                    result.waitersPerRefresh.map { Self.number($0, 2) } ?? "",
                    // The counts are the async loop's: a sync-read row leaves them empty.
                    sync == nil ? result.allocationsPerOperation.map { Self.number($0, 4) } ?? "" : "",
                    sync == nil ? result.allocatedBytesPerOperation.map { Self.number($0, 2) } ?? "" : "",
                    Self.number(result.cpuSeconds, 4), "\(result.peakResidentBytes)",
                    Self.number(result.harnessOverheadNanoseconds, 1),
                    result.bareLoopThroughput.map { Self.number($0, 1) } ?? "",
                    result.emptyStoreThroughput.map { Self.number($0, 1) } ?? "",
                    result.storeBytesPerWaiter.map { Self.number($0, 1) } ?? "",
                    result.callerBytesPerWaiter.map { Self.number($0, 1) } ?? "",
                    "\(result.clockAnomalies)",
                    spread.map { Self.number($0.minimum, 1) } ?? "", spread.map { Self.number($0.median, 1) } ?? "",
                    spread.map { Self.number($0.maximum, 1) } ?? "",
                    result.syncRead?.plainLoadThroughput.map { Self.number($0, 1) } ?? "",
                    result.syncRead.map { "\($0.threads)" } ?? "", sync.map { "\($0.misses)" } ?? "", result.cpus ?? "",
                    result.allocator?.rawValue ?? "", result.allocationCounter?.rawValue ?? "",
                    result.storeAllocationsPerWaiter.map { Self.number($0, 3) } ?? "",
                    result.callerAllocationsPerWaiter.map { Self.number($0, 3) } ?? "",
                ]
                lines.append(fields.map(Self.csvField).joined(separator: ","))
            }
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    static func csvField(_ field: String) -> String {
        guard field.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return field }
        return "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func number(_ value: Double, _ decimals: Int) -> String { String(format: "%.\(decimals)f", value) }
}
