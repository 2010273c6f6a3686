import Foundation
import SessionMeasurement
import SessionOracle

/// The CSV export: one row per store × scenario × operation kind.
extension ResultsReport {
    /// Every column, in order: the shared ones placed below, each family's own (``ScenarioFamily/columns``,
    /// in ``ScenarioFamilies/all``'s order), the transport's, then any ``Metric`` not placed (a new metric's
    /// column comes with its entry). A column is added here, in its family or in `Metric.all`, and nowhere
    /// else in the code; its meaning is written beside it, so the documentation cannot leave one out.
    static let csvTable: [CSVColumn] = {
        let placedColumns = sharedColumns + ScenarioFamilies.all.flatMap { $0.columns } + transportColumns
        let placed = Set(placedColumns.map(\.name))
        return placedColumns + Metric.all.filter { !placed.contains($0.name) }.map(CSVColumn.init)
    }()

    private static let sharedColumns: [CSVColumn] = [
        CSVColumn(
            "schema_version",
            "`\(csvSchemaVersion)`; bumped whenever a column is added, removed, renamed or changes meaning",
            value: { _ in "\(csvSchemaVersion)" }),
        CSVColumn("store", "store name") { $0.result.store },
        CSVColumn("scenario", "scenario name") { $0.result.scenario },
        CSVColumn("kind", "scenario kind") { $0.result.kind.rawValue },
        CSVColumn(
            "sweep_parameter", "for `sweep`: the parameter varied; empty otherwise",
            value: { $0.result.sweep?.parameter.rawValue ?? "" }),
        CSVColumn(
            "sweep_value", "for `sweep`: its value at this point (a name for `allocator`); empty otherwise",
            value: { $0.result.sweep?.valueText ?? "" }),
        CSVColumn(
            "repeat", "for `sweep`, and for `compare --repeats` (more than one): the pass (from 0); empty otherwise",
            value: { ($0.result.sweep?.repeatIndex ?? $0.result.repeatIndex).map { String($0) } ?? "" }),
        CSVColumn(
            "operation",
            """
            `read` (fast path, `validToken()` from tasks), `sync-read` (`currentToken()` from OS threads; stores \
            with a synchronous read, steady scenarios), `refresh-wait` (a call in a storm), `rejection` \
            (`tokenRejected`; in `writes-under-reads` the writer's, while the async callers read: the row's \
            throughput is theirs), `sync-write` (`writes-under-reads`: the writer's `tokenRejected` while OS threads \
            read `currentToken()`; the row's throughput is theirs), `sign-out`, `sign-in`, `save` (`crash-restart`: one save of a grant to storage, \
            fsync included), `elevated-read` (`step-up`: `elevatedToken()` with a fresh elevated token held), \
            `observer-lag-1` and `observer-lag-n` (`session-states`: from the call that changes the state to a \
            subscriber's receipt of it, with 1 and with `observers` subscribers); empty if nothing was measured
            """,
            value: { $0.latency?.kind.rawValue ?? "" }),
        CSVColumn(
            "verdict",
            """
            `pass`, `violated`, `hung`, `crashed`, `error`, `not-run` (the store hung or crashed in an earlier \
            scenario), or `known` (every violation named in the `--expect` file)
            """,
            value: { $0.result.verdict.rawValue }),
        CSVColumn(
            "violated_invariants", "space-separated ids (`I1 I7`), empty when none",
            value: { $0.result.violations.map { $0.invariant.id }.joined(separator: " ") }),
        CSVColumn("tasks", "concurrent callers") { "\($0.result.tasks)" },
        CSVColumn("seed", "the seed that reproduces the run") { "\($0.result.seed)" },
        CSVColumn(
            "operations",
            """
            calls the store served: a token, or a completed sign-in or sign-out; on a `sync-read` row, the \
            synchronous loop's calls that returned a token (as are its `seconds` and `throughput_ops_per_s`)
            """,
            value: { "\($0.sync?.operations ?? $0.result.operations)" }),
        CSVColumn(
            "failed_calls", "calls that ended in an error (cancelled ones included); never counted in `operations`",
            value: { $0.sync == nil ? "\($0.result.failedCalls)" : "0" }),
        CSVColumn(
            "unissued_calls",
            """
            open loop (`--rate`): calls the schedule asked for that could not be issued before the deadline \
            because the store fell behind; empty in a closed loop
            """,
            value: { $0.sync == nil ? $0.result.unissuedCalls.map { "\($0)" } ?? "" : "" }),
        CSVColumn(
            "seconds",
            "wall seconds of the measured phase (steady: from the first caller's start to the last one's stop)",
            value: { number($0.sync?.seconds ?? $0.result.seconds, 6) }),
        CSVColumn(.throughput),
        CSVColumn("samples", "latency samples of this operation kind") { $0.latency(\.count) },
        CSVColumn(.p50),
        CSVColumn(.p90),
        CSVColumn(.p99),
        CSVColumn(.p999),
        CSVColumn(.max),
        CSVColumn(.mean),
        CSVColumn(.refreshCalls),
        CSVColumn("storms", "storms run (rounds × accounts); 0 for steady scenarios") { "\($0.result.storms)" },
        CSVColumn(.refreshesPerExpiry),
        CSVColumn(.waitersPerRefresh),
        CSVColumn(.allocsPerOp),
        CSVColumn(.allocBytesPerOp),
        CSVColumn(
            "cpu_seconds", "CPU time of the measuring process during the run",
            value: { number($0.result.cpuSeconds, 4) }),
        CSVColumn(
            "peak_rss_bytes", "peak resident memory of the measuring process so far",
            value: { "\($0.result.peakResidentBytes)" }),
        CSVColumn(
            "harness_overhead_ns",
            "the harness's own cost per timed sample (two sample-clock reads and a histogram record)",
            value: { number($0.result.harnessOverheadNanoseconds, 1) }),
        CSVColumn(
            "bare_loop_ops_per_s",
            "steady scenarios: calls per second of a loop over the same store with no timing and no checks",
            value: { optional($0.result.bareLoopThroughput, 1) }),
        CSVColumn(
            "empty_store_ops_per_s",
            """
            steady scenarios: calls per second of the measured loop over a store that does nothing and returns a \
            token short enough to hold no reference count, so callers on different threads share nothing they \
            write (the harness's ceiling)
            """,
            value: { optional($0.result.emptyStoreThroughput, 1) }),
        CSVColumn(.storeBytesPerWaiter),
        CSVColumn(
            "caller_bytes_per_waiter",
            """
            `scale-storm`: live heap bytes per caller parked on a bare continuation through the same harness path \
            (its task, mostly)
            """,
            value: { optional($0.result.callerBytesPerWaiter, 1) }),
        CSVColumn(
            "clock_anomalies",
            """
            samples whose end read earlier than their start on the sample clock: counted here, never recorded (0 \
            on a sound clock)
            """,
            value: { "\($0.result.clockAnomalies)" }),
        CSVColumn(
            "caller_min_ops_per_s",
            """
            steady `read` and `sync-read` rows: calls per second of the slowest caller, over its own time \
            (fairness)
            """,
            value: { optional($0.spread?.minimum, 1) }),
        CSVColumn(
            "caller_median_ops_per_s",
            "steady `read` and `sync-read` rows: calls per second of the median caller, over its own time",
            value: { optional($0.spread?.median, 1) }),
        CSVColumn(
            "caller_max_ops_per_s",
            "steady `read` and `sync-read` rows: calls per second of the fastest caller, over its own time",
            value: { optional($0.spread?.maximum, 1) }),
        CSVColumn(
            "plain_load_ops_per_s",
            """
            stores with a synchronous read: the same thread loop over each thread's own copy of the store's token, \
            read with no synchronization — the floor of the loop on this machine, measured in the same run
            """,
            value: { optional($0.result.syncRead?.plainLoadThroughput, 1) }),
        CSVColumn(
            "sync_threads",
            "OS threads of the synchronous loop (the scenario's callers, at most 256, or `--sync-threads`)",
            value: { $0.result.syncRead.map { "\($0.threads)" } ?? "" }),
        CSVColumn(
            "sync_misses", "`sync-read` rows: calls where `currentToken()` answered `nil`",
            value: { $0.sync.map { "\($0.misses)" } ?? "" }),
        CSVColumn(
            "cpus", "the CPUs the measuring process could run on (`0-1`; `0` under `--cpus 0`)",
            value: { $0.result.cpus ?? "" }),
        CSVColumn(
            "allocator",
            "the allocator that served `malloc` in the measuring process, as observed there: `system` or `jemalloc`",
            value: { $0.result.allocator?.rawValue ?? "" }),
        CSVColumn(
            "allocation_counter",
            """
            what counted the allocation columns: `interposer` or `jemalloc`; empty where nothing could (the \
            report's notes say why)
            """,
            value: { $0.result.allocationCounter?.rawValue ?? "" }),
        CSVColumn(.storeAllocsPerWaiter),
        CSVColumn(
            "caller_allocs_per_waiter",
            """
            `scale-storm`: heap allocations per caller of the same crowd parked on bare continuations through the \
            same harness path
            """,
            value: { optional($0.result.callerAllocationsPerWaiter, 3) }),
    ]

    /// How the store reached the server, after every family's own columns.
    private static let transportColumns: [CSVColumn] = [
        CSVColumn(
            "transport", "how the store reached the server: `in-process` or `http` (`--transport http`)",
            value: { $0.result.transport?.transport ?? "in-process" }),
        CSVColumn(
            "transport_refreshes",
            "`http`: refresh calls whose transport overhead was measured (every one that got an answer)",
            value: { $0.result.transport.map { "\($0.refreshes)" } ?? "" }),
        CSVColumn(
            "transport_overhead_p50_us",
            """
            `http`: what the transport added to each refresh, in µs, the median: the client's round trip less the \
            server's own time from its `Server-Timing` header
            """,
            value: { optional($0.result.transport?.overheadP50Nanoseconds.map { $0 / 1000 }, 1) }),
        CSVColumn(
            "transport_overhead_p99_us",
            """
            `http`: what the transport added to each refresh, in µs, the 99th percentile (measured as for \
            `transport_overhead_p50_us`)
            """,
            value: { optional($0.result.transport?.overheadP99Nanoseconds.map { $0 / 1000 }, 1) }),
        CSVColumn(
            "clocked_load_ops_per_s",
            """
            stores with a synchronous read: the loop of `plain_load_ops_per_s` with a read of the store's clock \
            and one compare before each token is handed out — the floor of a correct store, which must not \
            hand out a token within the skew of its expiry; empty in results written before it was measured
            """,
            value: { optional($0.result.syncRead?.clockedLoadThroughput, 1) }),
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

    static func number(_ value: Double, _ decimals: Int) -> String { CSVColumn.number(value, decimals) }

    static func optional(_ value: Double?, _ decimals: Int) -> String { CSVColumn.optional(value, decimals) }
}
