import CDispatch
import Foundation
import Testing

@testable import SessionBench

/// Every kind of HTML report the tool writes, opened in headless Chromium as a reviewer opens a CI
/// artifact: no console message, no network request, and a screenshot saved to look at
/// (`.build/report-screenshots/`). `.ci/run` installs Chromium (Debian's `chromium`); elsewhere
/// these tests say how to get it and are skipped.
@Suite(
    "HTML reports in a browser", .tags(.slow), .skippedInQuickRun, .serialized,
    .disabled(if: TestEnvironment.isThreadSanitized, "\(TestEnvironment.processSuiteSkipped)"))
struct HTMLReportBrowserTests {
    static let chromium: String? = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }
    static let missing = "needs headless Chromium: apt-get install chromium (.ci/run installs it)"
    static let root = CommandLineTests.packageRoot

    @Test("CI has a browser to open the reports in")
    func browserInstalledInCI() {
        guard ProcessInfo.processInfo.environment["CI"] == "true" else { return }
        #expect(Self.chromium != nil, "\(Self.missing)")
    }

    /// The two checks below can fail: a page that logs to the console and fetches an image is
    /// caught by both.
    @Test("the browser check sees a console message and a request", .enabled(if: chromium != nil, "\(missing)"))
    func detectorCatchesBadPage() async throws {
        let directory = try ToolProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let page = directory.appendingPathComponent("bad.html")
        try """
        <!DOCTYPE html><html><body><p>bad</p><script>console.error("boom")</script>
        <img src="http://127.0.0.1:9/missing.png"></body></html>
        """.write(to: page, atomically: true, encoding: .utf8)
        let opened = try await Self.open(page, in: directory)
        #expect(opened.console.contains { $0.contains("boom") }, "\(opened.console)")
        #expect(opened.requests.contains { $0.contains("127.0.0.1:9/missing.png") }, "\(opened.requests)")
    }

    @Test(
        "each kind of report opens with no console message and no request", .enabled(if: chromium != nil, "\(missing)"))
    func reportsOpenClean() async throws {
        let directory = try ToolProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var pages: [(kind: String, url: URL)] = []
        func path(_ kind: String) -> URL { directory.appendingPathComponent("\(kind).html") }

        // The commands, run as a user runs them: a failing compare, stress and explore, a sweep.
        let runs: [(kind: String, arguments: [String], status: Int32)] = [
            (
                "compare",
                [
                    "compare", "--stores", "mutex,actor-naive", "--include-broken", "--scenario",
                    "expiry-storm,steady-reads",
                    "--rounds", "3", "--duration", "100ms", "--explore-schedules", "50",
                ], 1
            ),
            (
                "stress",
                [
                    "stress", "--stores", "mutex,actor-naive", "--include-broken", "--scenario", "expiry-storm",
                    "--rounds", "3", "--iterations", "1",
                ], 1
            ),
            ("explore", ["explore", "--stores", "actor-naive"], 1),
            (
                "sweep",
                [
                    "sweep", "--parameter", "tasks", "--values", "1,2", "--stores", "mutex,lock-free-read",
                    "--scenario", "steady-reads", "--duration", "50ms",
                ], 0
            ),
        ]
        for run in runs {
            let result = try await ToolProcess.run(
                run.arguments + ["--quiet", "--output", path(run.kind).path], timeout: 300)
            #expect(result.status == run.status, "\(run.kind): \(result.stdout)\(result.stderr)")
            pages.append((run.kind, path(run.kind)))
        }
        // The reference runs (`results/`): the page `report` draws, and a gate's page over them.
        let compare = try Self.reference("compare.json")
        let check = ThresholdCheck(
            thresholds: try Thresholds.load(
                path: Self.root.appendingPathComponent("thresholds.json").path,
                knownStores: Set(compare.results.map(\.store)).sorted()),
            results: compare.results)
        try ThresholdCheck.html(check.evaluate(), results: compare.results, file: "thresholds.json")
            .write(to: path("check"), atomically: true, encoding: .utf8)
        pages.append(("check", path("check")))
        let report = ResultsPage.html(
            [("compare", compare), ("sweep-tasks", try Self.reference("sweep-tasks.json"))], title: "results")
        try report.write(to: path("report"), atomically: true, encoding: .utf8)
        pages.append(("report", path("report")))
        let included = compare.html()
        try included.write(to: path("compare-include-broken"), atomically: true, encoding: .utf8)
        pages.append(("compare-include-broken", path("compare-include-broken")))

        let screenshots = Self.root.appendingPathComponent(".build/report-screenshots")
        try FileManager.default.createDirectory(at: screenshots, withIntermediateDirectories: true)
        for page in pages {
            let text = try String(contentsOf: page.url, encoding: .utf8)
            #expect(text.hasPrefix("<!DOCTYPE html>"), "\(page.kind)")
            #expect(!text.contains("<script"), "\(page.kind): a report needs no script")
            let opened = try await Self.open(page.url, in: directory)
            #expect(opened.console.isEmpty, "\(page.kind): \(opened.console)")
            #expect(opened.requests.isEmpty, "\(page.kind): \(opened.requests)")
            #expect(opened.screenshot.count > 10_000, "\(page.kind): screenshot of \(opened.screenshot.count) bytes")
            try opened.screenshot.write(to: screenshots.appendingPathComponent("\(page.kind).png"))
        }
        // The reference compare --include-broken report stays small enough to attach and open.
        #expect(included.utf8.count <= 2_000_000, "\(included.utf8.count) bytes")
    }

    static func reference(_ name: String) throws -> ResultsReport {
        let data = try Data(contentsOf: root.appendingPathComponent("results").appendingPathComponent(name))
        return try JSONDecoder().decode(ResultsReport.self, from: data)
    }

    struct Opened {
        /// Lines the page logged to the console (errors included: a refused load, a script error).
        var console: [String]
        /// URLs the page asked the network for (the browser's own update checks left out).
        var requests: [String]
        var screenshot: Data
    }

    /// Opens `page` in a fresh headless Chromium profile, with its console on standard error and
    /// a network log, and takes a screenshot.
    static func open(_ page: URL, in directory: URL) async throws -> Opened {
        let name = page.deletingPathExtension().lastPathComponent
        let profile = directory.appendingPathComponent("profile-\(name)")
        let netLog = directory.appendingPathComponent("\(name).netlog.json")
        let screenshot = directory.appendingPathComponent("\(name).png")
        let stderr = directory.appendingPathComponent("\(name).stderr")
        let arguments = [
            try #require(chromium), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--user-data-dir=\(profile.path)", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--disable-default-apps", "--enable-logging=stderr",
            "--v=0", "--log-net-log=\(netLog.path)", "--window-size=1200,2400", "--screenshot=\(screenshot.path)",
            page.absoluteString,
        ]
        let status = try await spawn(arguments, stderr: stderr, timeout: 60)
        #expect(status == 0, "chromium exited \(status) on \(name)")
        let log = (try? String(contentsOf: stderr, encoding: .utf8)) ?? ""
        let console = log.split(separator: "\n").filter { $0.contains(":CONSOLE") }.map(String.init)
        return Opened(
            console: console, requests: try pageRequests(netLog),
            screenshot: (try? Data(contentsOf: screenshot)) ?? Data())
    }

    /// The requests a page made: in Chromium's network log, the jobs whose network isolation key is
    /// the page's own `file://` site, for a URL that is not a file. (The browser's own requests,
    /// such as its update checks, carry no page's key.)
    static func pageRequests(_ netLog: URL) throws -> [String] {
        let data = try Data(contentsOf: netLog)
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let constants = try #require(json["constants"] as? [String: Any])
        let types = try #require(constants["logEventTypes"] as? [String: Int])
        let start = try #require(types["URL_REQUEST_START_JOB"])
        let events = (json["events"] as? [[String: Any]]) ?? []
        return events.compactMap { event in
            guard event["type"] as? Int == start, let parameters = event["params"] as? [String: Any],
                let url = parameters["url"] as? String, !url.hasPrefix("file:"),
                (parameters["network_isolation_key"] as? String)?.contains("file://") == true
            else { return nil }
            return url
        }
    }

    /// Runs `arguments` with standard error to a file, reaped by polling (as ``ToolProcess`` does),
    /// killed past `timeout`; its exit status.
    static func spawn(_ arguments: [String], stderr: URL, timeout: Double) async throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, stderr.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, arguments[0], &actions, nil, argv, envp)
        guard spawned == 0 else { throw CocoaError(.fileReadUnknown, userInfo: ["reason": "posix_spawn: \(spawned)"]) }
        let status = await ToolProcess.reap(pid, timeout: timeout, name: arguments[0])
        return status & 0x7f != 0 ? 128 + (status & 0x7f) : (status >> 8) & 0xff
    }
}
