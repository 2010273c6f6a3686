import Foundation
import SessionMeasurement
import SessionOracle

/// A column of the terminal and Markdown tables: the header both print, the CSV column whose
/// figure it shows (a ``Metric``; the first of them that has one), and the text of a row. A
/// column that shows a figure the CSV carries reads it through the metric, so the table and the
/// CSV never disagree on a number.
struct ReportColumn<Row>: Sendable {
    let header: String
    /// The CSV columns it shows, in the order it tries them; empty for a column of its own.
    let metrics: [Metric]
    /// The operation whose CSV row holds its figure; `nil`: the scenario's headline operation.
    let operation: OperationKind?
    /// The CSV column that holds what a column of its own shows, where one does (`restarts`).
    let csv: String?
    let text: @Sendable (Row) -> String

    init(_ header: String, csv: String? = nil, _ text: @escaping @Sendable (Row) -> String) {
        self.header = header
        metrics = []
        operation = nil
        self.csv = csv
        self.text = text
    }

    /// Where the CSV has the figure: `p50_ns` (of the `sync-read` row); `—` for a column of its own.
    var csvSource: String {
        guard !metrics.isEmpty else { return csv.map { "`\($0)`" } ?? "—" }
        let names = metrics.map { "`\($0.name)`" }.joined(separator: ", else ")
        return names + (operation.map { " (the `\($0.rawValue)` row)" } ?? "")
    }
}

/// One run as a row of a table: the result, and the name the row gives it (the store, with its
/// seed where the block's seeds vary).
struct ReportRow: Sendable {
    let result: ScenarioResult
    let name: String
}

/// A store's row of the transport block: what its runs over a transport added.
struct TransportRow: Sendable {
    let store: String
    let figures: [TransportFigures]
}

extension ReportColumn where Row == ReportRow {
    /// A figure of the CSV, of `operation` (`nil`: the scenario's headline one), as `format` writes
    /// it; `empty` where the run has none.
    init(
        _ header: String, _ metrics: [Metric], of operation: OperationKind? = nil, empty: String = "—",
        _ format: @escaping @Sendable (Double) -> String
    ) {
        self.header = header
        self.metrics = metrics
        self.operation = operation
        csv = nil
        text = { row in
            metrics.lazy.compactMap { $0.value(in: row.result, operation: operation) }.first.map(format) ?? empty
        }
    }

    static func latency(_ header: String, _ metric: Metric, of operation: OperationKind? = nil) -> Self {
        Self(header, [metric], of: operation) { Format.nanoseconds($0) }
    }

    static func rate(_ header: String, of operation: OperationKind? = nil) -> Self {
        Self(header, [.throughput], of: operation) { Format.rate($0) }
    }

    static func ratio(_ header: String, _ metrics: [Metric], empty: String = "—") -> Self {
        Self(header, metrics, empty: empty) { String(format: "%.2f", $0) }
    }
}

/// Every table's columns, in the order they print: the one catalog the terminal table and the
/// Markdown render from.
enum ReportColumns {
    static let store = ReportColumn<ReportRow>("store", csv: "store") { $0.name }

    /// Every scenario's block.
    static let summary: [ReportColumn<ReportRow>] = [
        store, ReportColumn("verdict", csv: "verdict") { ResultsReport.verdictText($0.result) }, .rate("calls/s"),
        .latency("p50", .p50), .latency("p99", .p99), .latency("p99.9", .p999),
        .ratio("refresh/expiry", [.refreshesPerExpiry]),
        // scale-storm's per waiting caller, where the run has no per-call figure (a note says so).
        .ratio("allocs/op", [.allocsPerOp, .storeAllocsPerWaiter], empty: "n/a"),
    ]

    /// `currentToken()` on OS threads, beside the async callers.
    static let syncRead: [ReportColumn<ReportRow>] = [
        ReportColumn("store", csv: "store") { $0.result.store }, .rate("calls/s", of: .syncRead),
        .latency("p50", .p50, of: .syncRead), .latency("p99", .p99, of: .syncRead),
        .latency("p99.9", .p999, of: .syncRead),
        ReportColumn("slowest/median caller") { row in
            row.result.syncRead?.callerSpread.map {
                $0.median > 0 ? String(format: "%.2f", $0.minimum / $0.median) : "—"
            }
                ?? "—"
        },
        ReportColumn("of plain load", csv: "plain_load_ops_per_s") { row in
            guard let sync = row.result.syncRead, let floor = sync.plainLoadThroughput else { return "—" }
            return floor > 0 ? String(format: "%.0f%%", sync.throughput / floor * 100) : "—"
        },
        ReportColumn("of clocked load", csv: "clocked_load_ops_per_s") { row in
            guard let sync = row.result.syncRead, let floor = sync.clockedLoadThroughput else { return "—" }
            return floor > 0 ? String(format: "%.0f%%", sync.throughput / floor * 100) : "—"
        },
    ]

    /// The writer of `writes-under-reads`: each 401's wait under the readers.
    static let writer: [ReportColumn<ReportRow>] = [
        ReportColumn("store", csv: "store") { $0.result.store },
        ReportColumn("writes") { row in count(row, .rejection) }, .latency("writer p50", .p50, of: .rejection),
        .latency("writer p99", .p99, of: .rejection), .rate("reads/s"),
        ReportColumn("writes (sync)") { row in count(row, .syncWrite) },
        .latency("writer p50 (sync)", .p50, of: .syncWrite), .latency("writer p99 (sync)", .p99, of: .syncWrite),
        .rate("sync reads/s", of: .syncWrite),
    ]

    /// `crash-restart`: sessions across restarts, what a backend leaves on disk, a save's cost.
    static let storage: [ReportColumn<ReportRow>] = [
        store, ReportColumn("backend", csv: "storage") { persistence($0) { $0.backend } },
        ReportColumn("restarts", csv: "restarts") { persistence($0) { "\($0.restarts)" } },
        ReportColumn("survived", csv: "restarts_survived") { persistence($0) { "\($0.survived)" } },
        ReportColumn("ended by reuse", csv: "restarts_ended_by_reuse") { persistence($0) { "\($0.endedByReuse)" } },
        ReportColumn("ended otherwise") { persistence($0) { "\($0.endedOtherwise)" } },
        ReportColumn("lost in flight", csv: "rotations_lost_in_flight") {
            persistence($0) { "\($0.rotationsLost(.inFlight))" }
        },
        ReportColumn("lost before save", csv: "rotations_lost_before_save") {
            persistence($0) { "\($0.rotationsLost(.beforeSave))" }
        },
        ReportColumn("lost mid-save", csv: "rotations_lost_mid_save") {
            persistence($0) { "\($0.rotationsLost(.midSave))" }
        }, plaintext, fileMode,
        .latency("save p50", .p50, of: .save), .latency("save p99", .p99, of: .save), storageCallsInReads("storage"),
    ]

    /// `shared-storage`: holders of one saved session.
    static let sharedStorage: [ReportColumn<ReportRow>] = [
        store, ReportColumn("backend", csv: "storage") { persistence($0) { $0.backend } },
        ReportColumn("holders") { persistence($0) { "\($0.holders)" } }, events, refreshes,
        .ratio("refreshes per event", [.refreshesPerExpiry]), taken, plaintext, fileMode,
        .latency("save p50", .p50, of: .save), .latency("save p99", .p99, of: .save),
    ]

    /// `replicas`: processes sharing one session through a database server.
    static let replicas: [ReportColumn<ReportRow>] = [
        store, ReportColumn("backend", csv: "storage") { persistence($0) { $0.backend } },
        ReportColumn("replicas", csv: "processes") { persistence($0) { "\($0.processes)" } }, events, refreshes,
        .ratio("refreshes per event", [.refreshesPerExpiry]), taken,
        .latency("refresh wait p50", .p50, of: .refreshWait), .latency("save p50", .p50, of: .save),
        storageCallsInReads("db"),
        ReportColumn("lock holder killed: back after") { row in
            row.result.persistence?.lockHolderRecoverySeconds.map { Format.nanoseconds($0 * 1e9) } ?? "—"
        },
        ReportColumn("lock timeout") { row in
            row.result.persistence?.lockTimeoutSeconds.map { Format.nanoseconds($0 * 1e9) } ?? "none"
        },
    ]

    /// What a transport added to each refresh, per store.
    static let transport: [ReportColumn<TransportRow>] = [
        ReportColumn("store", csv: "store") { $0.store },
        ReportColumn("refreshes", csv: "transport_refreshes") { "\($0.figures.map(\.refreshes).reduce(0, +))" },
        ReportColumn("overhead p50", csv: "transport_overhead_p50_us") { row in
            let p50s = row.figures.compactMap(\.overheadP50Nanoseconds)
            guard let low = p50s.min(), let high = p50s.max() else { return "—" }
            return low == high ? Format.nanoseconds(low) : "\(Format.nanoseconds(low))–\(Format.nanoseconds(high))"
        },
        ReportColumn("overhead p99", csv: "transport_overhead_p99_us") { row in
            row.figures.compactMap(\.overheadP99Nanoseconds).max().map { Format.nanoseconds($0) } ?? "—"
        },
        ReportColumn("scenarios") { row in "\(row.figures.count { $0.refreshes > 0 }) of \(row.figures.count)" },
    ]

    private static func count(_ row: ReportRow, _ operation: OperationKind) -> String {
        row.result.latencies.first { $0.kind == operation }.map { "\($0.count)" } ?? "—"
    }

    private static func persistence(_ row: ReportRow, _ text: (PersistenceFigures) -> String) -> String {
        row.result.persistence.map(text) ?? "—"
    }

    private static let events = ReportColumn<ReportRow>("events", csv: "storms") { "\($0.result.storms)" }
    private static let refreshes = ReportColumn<ReportRow>("refreshes") { "\($0.result.stormRefreshCalls)" }
    private static let taken = ReportColumn<ReportRow>("taken from storage") { row in
        persistence(row) { "\($0.grantsTaken)" }
    }
    private static let plaintext = ReportColumn<ReportRow>("plaintext at rest", csv: "plaintext_at_rest") { row in
        persistence(row) { $0.plaintextAtRest ? "yes" : "no" }
    }
    private static let fileMode = ReportColumn<ReportRow>("file mode", csv: "file_mode") { row in
        row.result.persistence?.fileMode ?? "—"
    }

    private static func storageCallsInReads(_ what: String) -> ReportColumn<ReportRow> {
        ReportColumn("\(what) calls in reads", csv: "storage_calls_during_reads") { row in
            guard let figures = row.result.persistence, figures.readsChecked > 0 else { return "—" }
            return "\(figures.storageCallsDuringReads) in \(figures.readsChecked)"
        }
    }

    /// Every table, named as docs/csv.md names it, with each column's header and where the CSV
    /// has its figure.
    static var tables: [(name: String, columns: [(header: String, csv: String)])] {
        func described<Row>(_ columns: [ReportColumn<Row>]) -> [(header: String, csv: String)] {
            columns.map { ($0.header, $0.csvSource) }
        }
        return [
            ("every scenario", described(summary)), ("· sync-read", described(syncRead)),
            ("· writer", described(writer)),
            ("· storage (crash-restart)", described(storage)), ("· storage (shared-storage)", described(sharedStorage)),
            ("· storage (replicas)", described(replicas)), ("transport", described(transport)),
        ]
    }

    /// `rows` under `columns`: the header line, then one line per row.
    static func render<Row>(_ columns: [ReportColumn<Row>], _ rows: [Row]) -> (header: [String], rows: [[String]]) {
        (columns.map(\.header), rows.map { row in columns.map { $0.text(row) } })
    }
}

/// One block of the tables: a scenario's runs, or one aspect of them (the synchronous path, the
/// writer, storage), or the transport; the terminal and Markdown print the same blocks.
struct ReportBlock {
    /// `expiry-storm`, `writes-under-reads · writer`; `nil` for a block its heading names.
    let title: String?
    /// A sub-block of a scenario's (`####` in Markdown).
    let isAspect: Bool
    let heading: String
    let header: [String]
    let rows: [[String]]
}

extension ResultsReport {
    /// Every block the tables print, in order.
    func blocks() -> [ReportBlock] {
        var blocks: [ReportBlock] = []
        func add(_ title: String?, aspect: Bool, _ heading: String, _ table: (header: [String], rows: [[String]])) {
            blocks.append(
                ReportBlock(title: title, isAspect: aspect, heading: heading, header: table.header, rows: table.rows))
        }
        for scenario in scenarioNames {
            let block = results.filter { $0.scenario == scenario }
            // Runs of one store with different seeds (stress) are told apart by their seed.
            let seedsVary = Set(block.map(\.seed)).count > 1
            let rows = block.map { ReportRow(result: $0, name: seedsVary ? "\($0.store), seed \($0.seed)" : $0.store) }
            add(scenario, aspect: false, heading(for: scenario), ReportColumns.render(ReportColumns.summary, rows))
            if let sync = syncHeading(for: scenario) {
                let synced = rows.filter { $0.result.syncRead != nil }
                add("\(scenario) · sync-read", aspect: true, sync, ReportColumns.render(ReportColumns.syncRead, synced))
            }
            if let writer = writerHeading(for: scenario) {
                let steady = rows.filter { $0.result.kind == .steadyReads }
                add("\(scenario) · writer", aspect: true, writer, ReportColumns.render(ReportColumns.writer, steady))
            }
            if let storage = storageHeading(for: scenario) {
                let stored = rows.filter { $0.result.persistence != nil }
                add(
                    "\(scenario) · storage", aspect: true, storage,
                    ReportColumns.render(storageColumns(for: scenario), stored))
            }
        }
        if let transport = transportHeading() {
            var stores: [String] = []
            for result in results where result.transport != nil && !stores.contains(result.store) {
                stores.append(result.store)
            }
            let rows = stores.map { store in
                TransportRow(store: store, figures: results.filter { $0.store == store }.compactMap(\.transport))
            }
            add(nil, aspect: false, transport, ReportColumns.render(ReportColumns.transport, rows))
        }
        return blocks
    }
}
