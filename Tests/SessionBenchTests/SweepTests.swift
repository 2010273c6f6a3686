import Foundation
import SessionBench
import Testing
import TokenServer

@Suite("Sweep", .tags(.slow), .skippedInQuickRun, .serialized, .timeLimit(.minutes(30)))
struct SweepTests {
    let cli = CommandLineTests()

    @Test("every point runs every store once per repeat, in an order rotated from point to point")
    func interleaving() {
        let order = SweepSchedule.order(stores: ["a", "b", "c"], values: [1, 2], repeats: 2)
        #expect(order.count == 12)
        #expect(order.prefix(3).map(\.store) == ["a", "b", "c"])
        #expect(order.dropFirst(3).prefix(3).map(\.store) == ["b", "c", "a"])
        for repeatIndex in 0..<2 {
            for value in [1.0, 2.0] {
                let point = order.filter { $0.repeatIndex == repeatIndex && $0.value == value }
                #expect(Set(point.map(\.store)) == ["a", "b", "c"])
            }
        }
    }

    @Test("parameters change the scenario they name, and refuse what does not apply")
    func parameters() throws {
        let steady = try ScenarioCatalog.named("steady-reads")
        #expect(try SweepParameter.tasks.apply(8, to: steady).tasks == 8)
        #expect(try SweepParameter.readersPerWriter.apply(10, to: steady).readersPerWriter == 10)
        #expect(try SweepParameter.tokenLifetime.apply(250, to: steady).tokenLifetime == .milliseconds(250))
        #expect(try SweepParameter.refreshLatency.apply(5, to: try ScenarioCatalog.named("expiry-storm")).latency == .fixed(.milliseconds(5)))
        #expect(throws: ScenarioError.self) { try SweepParameter.rate.apply(1000, to: try ScenarioCatalog.named("expiry-storm")) }
        #expect(throws: ScenarioError.self) { try SweepParameter.tasks.apply(1.5, to: steady) }
    }

    @Test("the CSV carries the sweep's columns for every run")
    func csv() async throws {
        let run = try await cli.run([
            "sweep", "--parameter", "tasks", "--values", "1,2", "--stores", "mutex,lock-free-read", "--repeats", "2",
            "--duration", "40ms", "--format", "csv", "--quiet",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        #expect(lines.first == ResultsReport.csvColumns.joined(separator: ","))
        let rows = lines.dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        let column = { (name: String) in ResultsReport.csvColumns.firstIndex(of: name)! }
        let reads = rows.filter { $0[column("operation")] == "read" }
        #expect(reads.count == 8, "2 values × 2 stores × 2 repeats")
        #expect(Set(reads.map { $0[column("sweep_parameter")] }) == ["tasks"])
        #expect(Set(reads.map { $0[column("sweep_value")] }) == ["1", "2"])
        #expect(Set(reads.map { $0[column("repeat")] }) == ["0", "1"])
        #expect(reads.allSatisfy { Double($0[column("bare_loop_ops_per_s")]) ?? 0 > 0 })
    }

    @Test("the table gives each point's fastest repeat over its slowest, and warns beyond 1.3")
    func repeatSpread() throws {
        let scenario = try ScenarioCatalog.named("steady-reads")
        func run(_ store: String, _ repeatIndex: Int, _ throughput: Double, sync: Double?) -> ScenarioResult {
            var result = ScenarioResult(store: store, scenario: scenario, verdict: .pass)
            result.operations = 1_000
            result.seconds = 1_000 / throughput
            result.sweep = SweepPoint(parameter: .tasks, value: 2, repeatIndex: repeatIndex)
            if let sync {
                var figures = SyncReadFigures(threads: 2)
                figures.operations = 1_000
                figures.throughput = sync
                result.syncRead = figures
            }
            return result
        }
        let report = ResultsReport(
            results: [
                run("steady", 0, 100, sync: 1_000), run("steady", 1, 110, sync: 1_050), run("steady", 2, 105, sync: 1_020),
                run("jumpy", 0, 100, sync: nil), run("jumpy", 1, 300, sync: nil), run("jumpy", 2, 120, sync: nil),
            ],
            metadata: .current(command: "sweep"))
        let table = report.sweepTable(baseline: nil)
        let lines = table.split(separator: "\n").map(String.init)
        #expect(lines.first?.contains("max/min") == true && lines.first?.contains("sync-read calls/s (median)") == true, "\(table)")
        #expect(lines.contains { $0.hasPrefix("2") && $0.contains("steady") && $0.contains("1.10") && $0.contains("1.05") }, "\(table)")
        #expect(lines.contains { $0.contains("jumpy") && $0.contains("3.00") }, "\(table)")
        let warnings = lines.filter { $0.hasPrefix("warning:") }
        #expect(warnings.count == 1 && warnings.first?.contains("jumpy at tasks=2: read repeats differ 3.00×") == true, "\(table)")
    }

    @Test(arguments: [
        (["--parameter", "tasks", "--values", "1,x"], "'x' is not a whole number"),
        (["--parameter", "speed", "--values", "1"], "speed"),
        (["--parameter", "rate", "--values", "100", "--scenario", "expiry-storm"], "rate applies to steady-reads only"),
        (["--parameter", "tasks", "--values", "1", "--baseline", "nosuch"], "unknown store 'nosuch'"),
    ])
    func badInput(_ arguments: [String], _ mention: String) async throws {
        let run = try await cli.run(["sweep"] + arguments)
        #expect(run.status == 2)
        #expect(run.stderr.contains(mention), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1)
    }
}
