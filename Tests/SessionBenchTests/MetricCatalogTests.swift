import Foundation
import SessionMeasurement
import SessionOracle
import Testing

@testable import SessionBench

/// The one metric catalog against everything that reads it: the CSV, the gate, baselines and
/// exports must give each figure the same name and the same value, on injected figures.
@Suite("Metric catalog")
struct MetricCatalogTests {
    /// A steady run with every figure the catalog reads set to a distinct value.
    static func steadyRun() throws -> ScenarioResult {
        var result = ScenarioResult(store: "mutex", scenario: try ScenarioCatalog.named("steady-reads"), verdict: .pass)
        var recorder = LatencyRecorder()
        for call in 0..<1_000 { recorder.record(.read, nanoseconds: Int64(100 + call)) }
        for call in 0..<500 { recorder.record(.syncRead, nanoseconds: Int64(40 + call)) }
        result.latencies = recorder.summaries
        result.operations = 2_000
        result.seconds = 0.5
        result.refreshCalls = 3
        result.storms = 2
        result.stormRefreshCalls = 2
        result.stormCallers = 128
        result.allocations = 500
        result.allocatedBytes = 12_000
        result.allocationCounter = .interposer
        result.storeBytesPerWaiter = 30.5
        result.storeAllocationsPerWaiter = 0.125
        var sync = SyncReadFigures(threads: 2)
        sync.operations = 9_000
        sync.seconds = 0.25
        sync.throughput = 36_000
        result.syncRead = sync
        return result
    }

    @Test("names are unique, and each is a CSV column and a name a thresholds file may use")
    func namesAreColumns() {
        let names = Metric.all.map(\.name)
        #expect(Set(names).count == names.count)
        for metric in Metric.all {
            #expect(ResultsReport.csvColumns.contains(metric.name), "\(metric.name) has no CSV column")
            #expect(Metric.named(metric.name) == metric)
            #expect(!metric.meaning.isEmpty && !metric.unit.isEmpty)
        }
        #expect(Metric.named("p42_ns") == nil)
    }

    @Test("every CSV row carries the value the gate reads for the row's operation")
    func csvMatchesGate() throws {
        let result = try Self.steadyRun()
        let csv = ResultsReport(results: [result], metadata: .current(command: "compare")).csv().components(
            separatedBy: "\r\n"
        ).filter { !$0.isEmpty }
        let header = csv[0].components(separatedBy: ",")
        let rows = csv.dropFirst().map { $0.components(separatedBy: ",") }
        #expect(rows.count == 2)
        for row in rows {
            let operationColumn = try #require(header.firstIndex(of: "operation"))
            let operation = try #require(OperationKind(rawValue: row[operationColumn]))
            for metric in Metric.all {
                let column = try #require(header.firstIndex(of: metric.name))
                let cell = row[column]
                if let value = metric.value(in: result, operation: operation) {
                    let parsed = try #require(Double(cell), "\(metric.name) (\(operation.rawValue)): '\(cell)'")
                    let tolerance: Double = Swift.max(1e-3, Swift.abs(value) * 1e-6)
                    #expect(Swift.abs(parsed - value) <= tolerance, "\(metric.name) (\(operation.rawValue))")
                } else {
                    #expect(
                        cell.isEmpty,
                        "\(metric.name) (\(operation.rawValue)) is not measured, yet the CSV says '\(cell)'")
                }
            }
        }
    }

    @Test("figures a run did not measure are absent, never zero")
    func unmeasuredIsAbsent() throws {
        let crashed = ScenarioResult(
            store: "mutex", scenario: try ScenarioCatalog.named("steady-reads"), verdict: .crashed)
        for metric in Metric.all where metric != .refreshCalls {
            #expect(metric.value(in: crashed, operation: nil) == nil, "\(metric.name)")
        }
        #expect(crashed.benchmarkFigures.isEmpty)
        let row = ResultsReport(results: [crashed], metadata: .current(command: "compare")).csv().components(
            separatedBy: "\r\n")[1].components(separatedBy: ",")
        let throughput = try #require(ResultsReport.csvColumns.firstIndex(of: "throughput_ops_per_s"))
        #expect(row[throughput] == "")
        // An operation named but not measured is not measured: never another operation's figure.
        var asyncOnly = try Self.steadyRun()
        asyncOnly.syncRead = nil
        asyncOnly.latencies.removeAll { $0.kind == .syncRead }
        #expect(Metric.throughput.value(in: asyncOnly, operation: .syncRead) == nil)
        #expect(Metric.p50.value(in: asyncOnly, operation: .syncRead) == nil)
        #expect(Metric.allocsPerOp.value(in: asyncOnly, operation: .syncRead) == nil)
        for metric in Metric.all {
            #expect(metric.value(in: asyncOnly, operation: .syncRead) == nil, "\(metric.name) of an operation not run")
            #expect(
                metric.value(in: asyncOnly, operation: .elevatedRead) == nil, "\(metric.name) of an operation not run")
        }
        #expect(Metric.refreshCalls.value(in: asyncOnly, operation: .read) == 3)
    }

    @Test("baselines and exports carry the catalog's benchmarked figures, under the catalog's names")
    func benchmarkFigures() throws {
        let result = try Self.steadyRun()
        let figures = result.benchmarkFigures
        #expect(figures.map(\.metric.name) == ["read p50", "read p99", "calls/s", "allocs/op", "refreshes/expiry"])
        #expect(
            figures.map(\.metric.bencherMeasure) == [
                "latency", "latency-p99", "throughput", "allocations-per-op", "refreshes-per-expiry",
            ])
        for (figure, metric) in zip(figures, [Metric.p50, .p99, .throughput, .allocsPerOp, .refreshesPerExpiry]) {
            #expect(figure.value == metric.value(in: result, operation: nil))
            #expect(figure.metric.better == metric.better)
            #expect(figure.metric.unit == metric.unit)
        }
        #expect(result.benchmarkFigures.first { $0.metric.name == "calls/s" }?.value == 4_000)
    }

    @Test("how a limit may bound a metric follows from its nature")
    func natures() {
        #expect(Metric.refreshCalls.isCount && !Metric.refreshCalls.isAllocationFigure)
        #expect(Metric.allocsPerOp.isCount && Metric.allocsPerOp.isAllocationFigure)
        #expect(!Metric.throughput.isCount && !Metric.throughput.isLatency)
        #expect(Metric.p99.isLatency && !Metric.p99.isCount)
    }

    @Test("the tables' columns show the CSV's figures: each column's number is its metric's, read the same way")
    func tableColumnsShowCSVFigures() throws {
        let result = try Self.steadyRun()
        let csv = ResultsReport(results: [result], metadata: .current(command: "compare")).csv()
            .components(separatedBy: "\r\n").filter { !$0.isEmpty }
        let header = csv[0].components(separatedBy: ",")
        let operationColumn = try #require(header.firstIndex(of: "operation"))
        let rows = csv.dropFirst().map { $0.components(separatedBy: ",") }
        func csvFigure(_ name: String, operation: OperationKind) throws -> Double {
            let row = try #require(rows.first { $0[operationColumn] == operation.rawValue })
            let column = try #require(header.firstIndex(of: name))
            return try #require(Double(row[column]))
        }
        let row = ReportRow(result: result, name: result.store)
        let summary = Dictionary(uniqueKeysWithValues: ReportColumns.summary.map { ($0.header, $0.text(row)) })
        #expect(summary["p50"] == Format.nanoseconds(try csvFigure("p50_ns", operation: .read)))
        #expect(summary["p99.9"] == Format.nanoseconds(try csvFigure("p999_ns", operation: .read)))
        #expect(summary["calls/s"] == Format.rate(try csvFigure("throughput_ops_per_s", operation: .read)))
        #expect(summary["allocs/op"] == String(format: "%.2f", try csvFigure("allocs_per_op", operation: .read)))
        #expect(
            summary["refresh/expiry"] == String(format: "%.2f", try csvFigure("refreshes_per_expiry", operation: .read))
        )
        let sync = Dictionary(uniqueKeysWithValues: ReportColumns.syncRead.map { ($0.header, $0.text(row)) })
        #expect(sync["p50"] == Format.nanoseconds(try csvFigure("p50_ns", operation: .syncRead)))
        #expect(sync["calls/s"] == Format.rate(try csvFigure("throughput_ops_per_s", operation: .syncRead)))
        // With no per-call count (scale-storm), allocs/op is the store's per waiting caller; with neither, n/a.
        var perWaiter = result
        perWaiter.allocations = nil
        #expect(ReportColumns.summary.last?.text(ReportRow(result: perWaiter, name: "")) == "0.12")
        perWaiter.storeAllocationsPerWaiter = nil
        #expect(ReportColumns.summary.last?.text(ReportRow(result: perWaiter, name: "")) == "n/a")
    }

    @Test("every table's headers are distinct, and every CSV column a table names is one")
    func tableCatalog() {
        #expect(ReportColumns.tables.count == 7)
        for table in ReportColumns.tables {
            #expect(Set(table.columns.map(\.header)).count == table.columns.count, "\(table.name)")
        }
        for column in ReportColumns.summary + ReportColumns.syncRead + ReportColumns.writer + ReportColumns.storage
            + ReportColumns.sharedStorage + ReportColumns.replicas
        {
            for metric in column.metrics { #expect(ResultsReport.csvColumns.contains(metric.name)) }
            if let csv = column.csv { #expect(ResultsReport.csvColumns.contains(csv), "\(column.header): \(csv)") }
        }
        #expect(ReportColumns.summary.last?.csvSource == "`allocs_per_op`, else `store_allocs_per_waiter`")
        for column in ReportColumns.transport {
            if let csv = column.csv { #expect(ResultsReport.csvColumns.contains(csv), "\(column.header): \(csv)") }
        }
    }
}
