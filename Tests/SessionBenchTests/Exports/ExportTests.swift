import Foundation
import SessionBench
import SessionOracle
import Testing

/// The exports as `compare` writes them, checked against each format's documented schema
/// (the fixtures beside these tests), with a store that fails among them.
@Suite("Exports", .tags(.slow), .skippedInQuickRun, .serialized, .timeLimit(.minutes(30)))
struct ExportTests {
    let cli = CommandLineTests()

    @Test("JUnit, Bencher and github-action-benchmark files validate and say what ran; markdown is appended")
    func exportsValidate() async throws {
        let directory = try cli.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        try Data("# Before\n\nkept\n".utf8).write(to: URL(fileURLWithPath: path("summary.md")))
        // A patient hang timeout: this runs beside the whole suite, where the steady run's
        // lowest-priority reader threads can go 5 s without a time slice (seen once in CI). What
        // is tested here is the exports, not the watchdog.
        let run = try await cli.run([
            "compare", "--stores", "mutex,actor-naive", "--include-broken", "--scenario", "steady-reads,expiry-storm",
            "--rounds", "3", "--tasks", "8", "--duration", "30ms", "--quiet", "--repeats", "2", "--hang-timeout", "30",
            "--output", "junit:\(path("report.xml"))", "--output", "bencher:\(path("bmf.json"))",
            "--output", "github-smaller:\(path("smaller.json"))", "--output", "github-bigger:\(path("bigger.json"))",
            "--output", path("plain.xml"), "--append-output", path("summary.md"),
        ])
        #expect(run.status == 1, "actor-naive fails: \(run.stderr)")

        let junit = try Data(contentsOf: URL(fileURLWithPath: path("report.xml")))
        #expect(try ExportFixtures.junit().errors(in: junit) == [])
        #expect(try Data(contentsOf: URL(fileURLWithPath: path("plain.xml"))) == junit, ".xml is JUnit")
        let xml = String(decoding: junit, as: UTF8.self)
        let steady = Scenario.Kind.steadyReads.judgedInvariants.count
        let storm = Scenario.Kind.expiryStorm.judgedInvariants.count
        #expect(xml.components(separatedBy: "<testcase ").count - 1 == 2 * (steady + storm))
        #expect(xml.contains("classname=\"actor-naive.expiry-storm\" name=\"I1 single-flight\">\n      <failure type=\"I1\""))
        #expect(xml.contains("classname=\"mutex.expiry-storm\" name=\"I1 single-flight\"/>"))
        #expect(xml.contains("(violated in 2 of 2 repeats)"))
        #expect(xml.contains("<testsuite name=\"mutex\" tests=\"\(steady + storm)\" failures=\"0\" errors=\"0\""))

        let bencher = try Data(contentsOf: URL(fileURLWithPath: path("bmf.json")))
        #expect(try ExportFixtures.bencher().errors(in: bencher) == [])
        let benchmarks = try #require(JSONSerialization.jsonObject(with: bencher) as? [String: [String: Any]])
        #expect(
            Set(benchmarks.keys) == ["mutex/steady-reads", "mutex/expiry-storm", "actor-naive/steady-reads"],
            "the store × scenario that failed is left out")
        #expect(Set(benchmarks["mutex/steady-reads"].map { Array($0.keys) } ?? []).isSuperset(of: ["latency", "throughput"]))

        for (file, unit) in [("smaller.json", "ns"), ("bigger.json", "calls/s")] {
            let data = try Data(contentsOf: URL(fileURLWithPath: path(file)))
            #expect(try ExportFixtures.githubActionBenchmark().errors(in: data) == [], "\(file)")
            let entries = try #require(JSONSerialization.jsonObject(with: data) as? [[String: Any]])
            #expect(entries.contains { ($0["name"] as? String)?.hasPrefix("mutex/steady-reads") == true && $0["unit"] as? String == unit })
            #expect(!entries.contains { ($0["name"] as? String)?.hasPrefix("actor-naive/expiry-storm") == true })
        }
        let smaller = try String(contentsOfFile: path("smaller.json"), encoding: .utf8)
        #expect(smaller.contains("\"name\" : \"mutex/steady-reads read p50\""))
        #expect(smaller.contains("\"range\" : \"± "), "two repeats give a range")

        let summary = try String(contentsOfFile: path("summary.md"), encoding: .utf8)
        #expect(summary.hasPrefix("# Before\n\nkept\n"))
        #expect(summary.contains("### steady-reads") && summary.contains("### Problems"))
        #expect(summary.components(separatedBy: "### expiry-storm").count == 2, "the report once")
    }

    @Test("every invariant a reference run violated is one its scenario's kind judges")
    func judgedInvariantsCoverReferenceRuns() throws {
        let results = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("results")
        let files = try FileManager.default.contentsOfDirectory(atPath: results.path).filter { $0.hasSuffix(".json") }
        var violations = 0
        for file in files {
            let report = try JSONDecoder().decode(
                ResultsReport.self, from: Data(contentsOf: results.appendingPathComponent(file)))
            for result in report.results {
                for violation in result.violations {
                    violations += 1
                    #expect(
                        result.kind.judgedInvariants.contains(violation.invariant),
                        "\(file): \(result.store) × \(result.scenario) violated \(violation.invariant)")
                }
            }
        }
        #expect(violations > 20, "the reference runs include the broken stores")
    }

    @Test("a bad export destination is one line, exit 2, and nothing is written")
    func badDestinations() async throws {
        let directory = try cli.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let kept = directory.appendingPathComponent("kept.csv").path
        for (arguments, mention) in [
            (["--output", "junit:"], "--output needs a file path"),
            (["--append-output", "-"], "--append-output needs a file"),
            (["--append-output", "/nonexistent-dir/s.md"], "does not exist"),
            (["--append-output", directory.path], "is a directory"),
        ] {
            let run = try await cli.run(
                ["compare", "--stores", "mutex", "--scenario", "steady-reads", "--duration", "30ms", "--quiet",
                 "--output", kept] + arguments)
            #expect(run.status == 2, "\(arguments)")
            #expect(run.stderr.split(separator: "\n").count == 1 && run.stderr.contains(mention), "\(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: kept))
        }
    }
}

@Suite("JUnit export")
struct JUnitExportTests {
    static func result(_ store: String, _ scenario: String, _ verdict: ScenarioResult.Verdict) throws -> ScenarioResult {
        ScenarioResult(store: store, scenario: try ScenarioCatalog.named(scenario), verdict: verdict)
    }

    @Test("hangs, crashes, runs never started and violations each get their JUnit form, escaped and valid")
    func everyVerdict() throws {
        var violated = try Self.result("mutex", "expiry-storm", .violated)
        let violation = """
            {"invariant": 1, "scenario": "expiry-storm", "seed": 1, "occurrences": 2,
             "summary": "2 refresh calls <for> one expiry & \\"more\\"", "trace": ["first\\u0001event", "second"]}
            """
        violated.violations = [try JSONDecoder().decode(Violation.self, from: Data(violation.utf8))]
        var hung = try Self.result("hangs", "expiry-storm", .hung)
        hung.hang = .init(stuckCallers: 3, ofCallers: 8, operation: .refreshWait, waitedSeconds: 5, phase: "storm")
        var crashed = try Self.result("crashes", "expiry-storm", .crashed)
        crashed.failure = "signal 4: Fatal error"
        let notRun = try Self.result("crashes", "401-storm", .notRun)
        let passed = try Self.result("mutex", "steady-reads", .pass)
        let report = ResultsReport(
            results: [violated, hung, crashed, notRun, passed], metadata: .current(command: "compare"))
        let xml = report.junit()
        #expect(try ExportFixtures.junit().errors(in: Data(xml.utf8)) == [], "\(xml)")

        let judged = Scenario.Kind.expiryStorm.judgedInvariants.count
        #expect(xml.contains(
            "<failure type=\"I1\" message=\"2 refresh calls &lt;for&gt; one expiry &amp; &quot;more&quot;\">"))
        #expect(xml.contains("first\u{FFFD}event\nsecond</failure>"), "a control character is replaced")
        #expect(xml.contains("name=\"I3 no-hang\">\n      <failure type=\"I3\" message=\"3 of 8 callers stuck in refresh-wait"))
        #expect(xml.contains("<testsuite name=\"hangs\" tests=\"\(judged)\" failures=\"1\" errors=\"0\" skipped=\"\(judged - 1)\""))
        #expect(xml.contains("<error type=\"run\" message=\"crashed: signal 4: Fatal error\"/>"))
        let storm401 = Scenario.Kind.rejectionStorm.judgedInvariants.count
        #expect(xml.contains(
            "<testsuite name=\"crashes\" tests=\"\(judged + storm401)\" failures=\"0\" errors=\"\(judged)\" "
                + "skipped=\"\(storm401)\""))
        #expect(xml.contains("<testcase classname=\"mutex.steady-reads\" name=\"I13 session-kept\"/>"))
    }

    @Test("a repeat that crashed makes every case it did not fail an error, though the others passed")
    func crashInOneRepeat() throws {
        var runs: [ScenarioResult] = []
        for pass in 0..<3 {
            var run = try Self.result("mutex", "expiry-storm", pass == 1 ? .crashed : .pass)
            run.repeatIndex = pass
            if pass == 1 { run.failure = "signal 11" }
            runs.append(run)
        }
        let xml = ResultsReport(results: runs, metadata: .current(command: "compare")).junit()
        let judged = Scenario.Kind.expiryStorm.judgedInvariants.count
        #expect(xml.contains("errors=\"\(judged)\""), "\(xml)")
        #expect(xml.contains("message=\"crashed in 1 of 3 repeats: signal 11\""))
        #expect(!xml.contains("name=\"I1 single-flight\"/>"))
    }
}
