import Foundation
import SessionBench
import Testing

/// The synchronous read's second floor: the plain load behind the store's clock and one compare,
/// what every correct `currentToken()` does at least. Figures are injected: what is tested is how
/// the table, the CSV and the gate read them, not this machine's speed.
@Suite("Clocked-load floor")
struct ClockedFloorTests {
    /// A steady run (``MetricCatalogTests/steadyRun()``) whose sync read made 80M calls/s, beside
    /// a plain load of 160M and the clocked floor given.
    static func result(clocked: Double?) throws -> ScenarioResult {
        var result = try MetricCatalogTests.steadyRun()
        var sync = SyncReadFigures(threads: 4)
        sync.operations = 80_000_000
        sync.seconds = 1
        sync.throughput = 80_000_000
        sync.plainLoadThroughput = 160_000_000
        sync.clockedLoadThroughput = clocked
        result.syncRead = sync
        return result
    }

    static func thresholds(_ ratio: Double, operation: String = "sync-read") throws -> Thresholds {
        try Thresholds.parse(
            Data(
                #"""
                { "version": 1, "limits": [ { "metric": "throughput_ops_per_s", "store": "mutex", "scenario": "steady-reads", "operation": "\#(operation)", "min_ratio": \#(ratio), "of": { "baseline": "clocked_load" } } ] }
                """#.utf8), path: "t.json", knownStores: ["mutex"])
    }

    @Test("the table gives the sync read over both floors, and names the clocked one in the heading")
    func table() throws {
        let report = ResultsReport(
            results: [try Self.result(clocked: 100_000_000)], metadata: .current(command: "compare"))
        let table = report.table()
        #expect(table.contains("of clocked load"), "\(table)")
        #expect(table.contains("the same behind the store's clock and a compare: 100.00M calls/s"), "\(table)")
        let row = try #require(
            table.split(separator: "\n").first { $0.hasPrefix("mutex") && $0.contains("50%") })
        #expect(row.hasSuffix("80%"), "80M of the clocked floor's 100M: \(row)")
    }

    @Test("the CSV carries the clocked floor, and leaves it empty where it was not measured")
    func csv() throws {
        for (clocked, cell) in [(Optional(100_000_000.0), "100000000.0"), (nil, "")] {
            let lines = ResultsReport(
                results: [try Self.result(clocked: clocked)], metadata: .current(command: "compare")
            ).csv()
                .components(separatedBy: "\r\n").filter { !$0.isEmpty }
            let header = lines[0].components(separatedBy: ",")
            let column = try #require(header.firstIndex(of: "clocked_load_ops_per_s"))
            let syncRow = try #require(lines.dropFirst().first { $0.contains(",sync-read,") }).components(
                separatedBy: ",")
            #expect(syncRow[column] == cell)
        }
    }

    @Test("the gate holds sync reads to the clocked floor, and a result without it is not measured")
    func gate() throws {
        let passing = ThresholdCheck(
            thresholds: try Self.thresholds(0.75), results: [try Self.result(clocked: 100_000_000)]
        ).evaluate()
            .filter { $0.source == "limits[0]" }
        #expect(passing.count == 1 && passing.allSatisfy(\.passed), "\(passing)")
        #expect(passing.first?.limit.contains("clocked load") == true)
        let failing = ThresholdCheck(
            thresholds: try Self.thresholds(0.85), results: [try Self.result(clocked: 100_000_000)]
        ).evaluate()
            .filter { $0.source == "limits[0]" }
        #expect(failing.count == 1 && failing.allSatisfy { !$0.passed }, "\(failing)")
        let unmeasured = ThresholdCheck(thresholds: try Self.thresholds(0.5), results: [try Self.result(clocked: nil)])
            .evaluate()
            .filter { $0.source == "limits[0]" }
        #expect(
            unmeasured.count == 1 && unmeasured.allSatisfy { !$0.passed && $0.measured == "clocked load not measured" },
            "\(unmeasured)")
    }

    @Test("clocked_load bounds the synchronous read only")
    func syncReadOnly() {
        #expect {
            try Self.thresholds(0.5, operation: "read")
        } throws: { error in
            "\(error)".contains(
                "limits[0].of.baseline: clocked_load compares with throughput_ops_per_s of operation sync-read only")
        }
    }
}
