import Foundation

/// The CSV export: one row per store × scenario × operation kind.
extension ResultsReport {
    /// Where a row's fields come from: a result and one operation's latencies (`nil` when
    /// nothing was measured, e.g. a crashed store).
    struct CSVRow {
        let result: ScenarioResult
        let latency: LatencySummary?

        /// A sync-read row counts the synchronous loop's calls, time and callers.
        var sync: SyncReadFigures? { latency?.kind == .syncRead ? result.syncRead : nil }
        var spread: ThroughputSpread? {
            sync != nil ? sync?.callerSpread : (latency?.kind == .read ? result.callerSpread : nil)
        }

        func latency(_ figure: (LatencySummary) -> UInt64) -> String { latency.map { "\(figure($0))" } ?? "" }
        /// A count from the storage figures, empty outside scenarios over storage.
        func persisted(_ figure: (PersistenceFigures) -> Int) -> String {
            result.persistence.map { "\(figure($0))" } ?? ""
        }
        /// The async loop's figure, empty on a sync-read row.
        func async(_ value: Double?, _ decimals: Int) -> String { sync == nil ? optional(value, decimals) : "" }
    }

    /// Every column, in order: its name (the README documents each) and how a row fills it.
    /// A column is added here, and nowhere else in the code.
    static let csvTable: [(name: String, value: @Sendable (CSVRow) -> String)] = [
        ("schema_version", { _ in "\(csvSchemaVersion)" }),
        ("store", { $0.result.store }),
        ("scenario", { $0.result.scenario }),
        ("kind", { $0.result.kind.rawValue }),
        ("sweep_parameter", { $0.result.sweep?.parameter.rawValue ?? "" }),
        ("sweep_value", { $0.result.sweep?.valueText ?? "" }),
        ("repeat", { ($0.result.sweep?.repeatIndex ?? $0.result.repeatIndex).map { String($0) } ?? "" }),
        ("operation", { $0.latency?.kind.rawValue ?? "" }),
        ("verdict", { $0.result.verdict.rawValue }),
        ("violated_invariants", { $0.result.violations.map { $0.invariant.id }.joined(separator: " ") }),
        ("tasks", { "\($0.result.tasks)" }),
        ("seed", { "\($0.result.seed)" }),
        ("operations", { "\($0.sync?.operations ?? $0.result.operations)" }),
        ("failed_calls", { $0.sync == nil ? "\($0.result.failedCalls)" : "0" }),
        ("unissued_calls", { $0.sync == nil ? $0.result.unissuedCalls.map { "\($0)" } ?? "" : "" }),
        ("seconds", { number($0.sync?.seconds ?? $0.result.seconds, 6) }),
        ("throughput_ops_per_s", { number($0.sync?.throughput ?? $0.result.throughput, 1) }),
        ("samples", { $0.latency(\.count) }),
        ("p50_ns", { $0.latency(\.p50) }),
        ("p90_ns", { $0.latency(\.p90) }),
        ("p99_ns", { $0.latency(\.p99) }),
        ("p999_ns", { $0.latency(\.p999) }),
        ("max_ns", { $0.latency(\.max) }),
        ("mean_ns", { optional($0.latency?.mean, 1) }),
        ("refresh_calls", { "\($0.result.refreshCalls)" }),
        ("storms", { "\($0.result.storms)" }),
        ("refreshes_per_expiry", { optional($0.result.refreshesPerExpiry, 3) }),
        ("waiters_per_refresh", { optional($0.result.waitersPerRefresh, 2) }),
        // The counts are the async loop's: a sync-read row leaves them empty.
        ("allocs_per_op", { $0.async($0.result.allocationsPerOperation, 4) }),
        ("alloc_bytes_per_op", { $0.async($0.result.allocatedBytesPerOperation, 2) }),
        ("cpu_seconds", { number($0.result.cpuSeconds, 4) }),
        ("peak_rss_bytes", { "\($0.result.peakResidentBytes)" }),
        ("harness_overhead_ns", { number($0.result.harnessOverheadNanoseconds, 1) }),
        ("bare_loop_ops_per_s", { optional($0.result.bareLoopThroughput, 1) }),
        ("empty_store_ops_per_s", { optional($0.result.emptyStoreThroughput, 1) }),
        ("store_bytes_per_waiter", { optional($0.result.storeBytesPerWaiter, 1) }),
        ("caller_bytes_per_waiter", { optional($0.result.callerBytesPerWaiter, 1) }),
        ("clock_anomalies", { "\($0.result.clockAnomalies)" }),
        ("caller_min_ops_per_s", { optional($0.spread?.minimum, 1) }),
        ("caller_median_ops_per_s", { optional($0.spread?.median, 1) }),
        ("caller_max_ops_per_s", { optional($0.spread?.maximum, 1) }),
        ("plain_load_ops_per_s", { optional($0.result.syncRead?.plainLoadThroughput, 1) }),
        ("sync_threads", { $0.result.syncRead.map { "\($0.threads)" } ?? "" }),
        ("sync_misses", { $0.sync.map { "\($0.misses)" } ?? "" }),
        ("cpus", { $0.result.cpus ?? "" }),
        ("allocator", { $0.result.allocator?.rawValue ?? "" }),
        ("allocation_counter", { $0.result.allocationCounter?.rawValue ?? "" }),
        ("store_allocs_per_waiter", { optional($0.result.storeAllocationsPerWaiter, 3) }),
        ("caller_allocs_per_waiter", { optional($0.result.callerAllocationsPerWaiter, 3) }),
        // Scenarios over storage (crash-restart, shared-storage); empty elsewhere.
        ("storage", { $0.result.persistence?.backend ?? "" }),
        ("reuse_grace_s", { optional($0.result.persistence?.reuseGraceSeconds, 3) }),
        ("processes", { $0.persisted(\.processes) }),
        ("crashes", { $0.persisted(\.crashes) }),
        ("restarts", { $0.persisted(\.restarts) }),
        ("restarts_survived", { $0.persisted(\.survived) }),
        ("restarts_ended_by_reuse", { $0.persisted(\.endedByReuse) }),
        ("rotations_lost_in_flight", { $0.persisted { $0.rotationsLost(.inFlight) } }),
        ("rotations_lost_before_save", { $0.persisted { $0.rotationsLost(.beforeSave) } }),
        ("rotations_lost_mid_save", { $0.persisted { $0.rotationsLost(.midSave) } }),
        ("plaintext_at_rest", { $0.result.persistence.map { $0.plaintextAtRest ? "yes" : "no" } ?? "" }),
        ("file_mode", { $0.result.persistence?.fileMode ?? "" }),
        ("storage_calls_during_reads", { $0.persisted(\.storageCallsDuringReads) }),
        // step-up and session-states; empty elsewhere.
        ("prompts", { $0.result.stepUp.map { "\($0.prompts)" } ?? "" }),
        ("prompts_per_burst", { optional($0.result.stepUp?.promptsPerBurst, 2) }),
        ("elevate_calls", { $0.result.stepUp.map { "\($0.elevateCalls)" } ?? "" }),
        ("observers", { row in
            switch row.latency?.kind {
            case .observerLagOne?: "1"
            case .observerLagMany?: row.result.observers.map { "\($0)" } ?? ""
            default: ""
            }
        }),
        // How the store reached the server, and what the transport added per refresh.
        ("transport", { $0.result.transport?.transport ?? "in-process" }),
        ("transport_refreshes", { $0.result.transport.map { "\($0.refreshes)" } ?? "" }),
        ("transport_overhead_p50_us", { optional($0.result.transport?.overheadP50Nanoseconds.map { $0 / 1000 }, 1) }),
        ("transport_overhead_p99_us", { optional($0.result.transport?.overheadP99Nanoseconds.map { $0 / 1000 }, 1) }),
    ]

    /// The fixed CSV header.
    public static let csvColumns = csvTable.map(\.name)

    /// RFC 4180: one row per store × scenario × operation kind (a row with an empty
    /// operation when nothing was measured, e.g. a crashed store).
    public func csv() -> String {
        var lines = [Self.csvColumns.joined(separator: ",")]
        for result in results {
            let kinds: [LatencySummary?] = result.latencies.isEmpty ? [nil] : result.latencies
            for latency in kinds {
                let row = CSVRow(result: result, latency: latency)
                lines.append(Self.csvTable.map { Self.csvField($0.value(row)) }.joined(separator: ","))
            }
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    static func csvField(_ field: String) -> String {
        guard field.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return field }
        return "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func number(_ value: Double, _ decimals: Int) -> String { String(format: "%.\(decimals)f", value) }

    static func optional(_ value: Double?, _ decimals: Int) -> String { value.map { number($0, decimals) } ?? "" }
}
