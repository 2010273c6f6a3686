import Foundation
import SessionOracle
import Testing

@testable import SessionBench

/// What an HTML report holds, checked on the reference runs in `results/` (no browser needed;
/// ``HTMLReportBrowserTests`` opens the pages).
@Suite("HTML reports")
struct HTMLReportTests {
    @Test("text is escaped wherever it goes")
    func escaping() {
        #expect(HTMLText.escape("<a href='x'>&\"") == "&lt;a href=&#39;x&#39;&gt;&amp;&quot;")
        #expect(HTMLText.escape("a\u{1}b") == "a\\u{1}b")
        var page = HTMLPage(title: "<t>")
        page.table(["<h>"], [["<script>", "FAIL I1"]])
        let html = page.render()
        #expect(!html.contains("<script>") && html.contains("&lt;script&gt;"))
        #expect(html.contains("<td class=\"bad\">FAIL I1</td>"))
    }

    @Test("the reference compare --include-broken report: every violation, its events and a command; nothing fetched")
    func referenceCompare() throws {
        let compare = try HTMLReportBrowserTests.reference("compare.json")
        let html = compare.html(rerun: { "session-bench compare --stores \($0.store) --scenario \($0.scenario)" })
        let failed = compare.results.filter { !$0.verdict.passes }
        #expect(!failed.isEmpty, "the reference run includes the broken stores")
        for result in failed {
            for violation in result.violations
            where !(result.known ?? []).contains(where: { $0.invariant == violation.invariant }) {
                #expect(html.contains(HTMLText.escape("\(result.store) × \(result.scenario): \(violation.invariant)")))
                #expect(html.contains(HTMLText.escape(violation.summary)), "\(violation.summary)")
                if let event = violation.trace.first { #expect(html.contains(HTMLText.escape(event))) }
            }
            #expect(
                html.contains(
                    HTMLText.escape("session-bench compare --stores \(result.store) --scenario \(result.scenario)")))
        }
        for forbidden in ["http://", "https://", " src=", "<link", "<script", "@import", "url("] {
            #expect(!html.contains(forbidden), "the page refers to something outside it: \(forbidden)")
        }
        #expect(html.contains("Content-Security-Policy\" content=\"default-src 'none'"))
        // Every chart is on the page with the table behind it, a row per store it draws.
        let charts = compare.charts()
        #expect(charts.count >= 5)
        for chart in charts {
            #expect(html.contains("id=\"chart-\(chart.id)\""))
            #expect(!chart.rows.isEmpty && chart.rows.allSatisfy { $0.count == chart.header.count }, "\(chart.id)")
            #expect(chart.svg.contains("<title>") && chart.svg.contains("role=\"img\""))
        }
        // The refresh chart draws the double refresh that fails actor-naive.
        let storm = try #require(charts.first { $0.id == "refreshes-expiry-storm" })
        let naive = try #require(storm.rows.first { $0.first == "actor-naive" })
        #expect((Double(naive[3]) ?? 0) > 1, "\(naive)")
        #expect(storm.rows.filter { $0.first != "actor-naive" }.allSatisfy { $0[3] == "1.00" }, "\(storm.rows)")
    }

    @Test("a sweep draws calls/s against the swept value, and the plain-load floor beside currentToken()")
    func sweepCharts() throws {
        let sweep = try HTMLReportBrowserTests.reference("sweep-tasks.json")
        let charts = sweep.charts()
        let throughput = try #require(charts.first { $0.id == "throughput-steady-reads" })
        #expect(throughput.header == ["series", "tasks=1", "tasks=2", "tasks=4", "tasks=8", "tasks=16"])
        #expect(Set(throughput.rows.map { $0[0] }) == Set(sweep.results.map(\.store)))
        let synchronous = try #require(charts.first { $0.id == "sync-read-steady-reads" })
        #expect(synchronous.rows.last?.first == "plain load (floor)")
    }

    @Test("an explored violation's parts: the events, the interleaving as it is, the replay as a command")
    func exploredTrace() {
        var page = HTMLPage(title: "t")
        var shown: Set<[String]> = []
        let trace = [
            "server call #2 refresh", "the interleaving (g3: the token of generation 3):", "  caller 0   caller 1",
            "  validToken()", "replay: session-bench explore --stores x --replay sbx1:random:1:2",
        ]
        ResultsReport.traceHTML(trace, shown: &shown, into: &page)
        ResultsReport.traceHTML(trace, shown: &shown, into: &page)
        let html = page.render()
        #expect(html.contains("<pre>server call #2 refresh</pre>"))
        #expect(html.contains("The interleaving (g3: the token of generation 3)"))
        #expect(html.contains("<pre>caller 0   caller 1\nvalidToken()</pre>"))
        #expect(
            html.components(separatedBy: "sbx1:random:1:2").count == 2,
            "the second violation of one schedule names it once")
        #expect(html.contains("as above."))
    }

    @Test("axes: powers of ten on a log axis, round steps on a linear one")
    func axes() {
        let log = ChartScale.logarithmic.axis([150, 20_000])
        #expect(log.low == 100 && log.high == 100_000 && log.ticks == [100, 1_000, 10_000, 100_000])
        let linear = ChartScale.linear.axis([0.3, 48])
        #expect(linear.low == 0 && linear.high == 50 && linear.ticks == [0, 10, 20, 30, 40, 50])
        #expect(ChartScale.linear.fraction(25, low: 0, high: 50) == 0.5)
    }
}

/// `report`, and `--output` where a command writes HTML alone: bad input is one line, exit 2,
/// and no file.
@Suite("HTML report input", .tags(.slow), .skippedInQuickRun)
struct HTMLReportInputTests {
    @Test("bad input: one line, exit 2, nothing written")
    func refusals() async throws {
        let directory = try ToolProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let page = directory.appendingPathComponent("page.html").path
        let empty = directory.appendingPathComponent("empty.json")
        try "{}".write(to: empty, atomically: true, encoding: .utf8)
        let reference = CommandLineTests.packageRoot.appendingPathComponent("results/compare.json").path
        let cases: [([String], String)] = [
            (["report", "--output", page], "give at least one JSON report"),
            (["report", directory.appendingPathComponent("none.json").path, "--output", page], "cannot be read"),
            (["report", empty.path, "--output", page], "is not a session-bench JSON report (no 'schemaVersion')"),
            (["report", reference, "--output", directory.appendingPathComponent("page.txt").path], "ending in .html"),
            (
                ["report", reference, "--output", page, "--charts", directory.appendingPathComponent("no").path],
                "is not a folder"
            ),
            (
                ["explore", "--stores", "mutex", "--output", directory.appendingPathComponent("e.md").path],
                "ending in .html"
            ),
            (
                ["check", "--thresholds", "thresholds.json", "--output", "-"],
                "the table already goes to standard output"
            ),
        ]
        for (arguments, wanted) in cases {
            let run = try await ToolProcess.run(arguments)
            #expect(run.status == 2, "\(arguments): \(run.stderr)")
            #expect(
                run.stderr.contains(wanted) && run.stderr.split(separator: "\n").count == 1,
                "\(arguments): \(run.stderr)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["empty.json"])
    }
}
