import Foundation
import SessionOracle

/// The report as one self-contained HTML page: what failed first (each violation with its
/// events, the interleaving and the command that replays it), then the charts, the tables every
/// other format prints, and the run's metadata.
extension ResultsReport {
    /// - Parameters:
    ///   - rerun: the command that runs a result's store × scenario again, where the caller knows
    ///     it (the command line's options); `nil` leaves it out.
    ///   - extra: sections of the command's own, placed first (a gate's checks).
    public func html(
        title: String? = nil, rerun: (ScenarioResult) -> String? = { _ in nil },
        extra: (inout HTMLPage) -> Void = { _ in }
    ) -> String {
        let view = shown()
        let failed = view.results.filter { !$0.verdict.passes }
        var page = HTMLPage(title: title ?? "session-bench \(metadata.command)")
        let summary =
            "\(view.results.count) run(s) of \(Set(view.results.map(\.store)).count) store(s) × "
            + "\(view.scenarioNames.count) scenario(s): "
            + (failed.isEmpty ? "every run passed" : "\(failed.count) did not pass")
            + (view.results.contains { $0.verdict == .known } ? " (known violations count as passed)" : "")
        extra(&page)
        if !failed.isEmpty || expectations.map({ !$0.stale.isEmpty }) == true {
            page.heading("What failed", id: "problems")
            if failed.count > 3 {
                // Many failures: the list first, so a reader sees them all before the first box.
                page.table(
                    ["store", "scenario", "verdict", "first finding"],
                    failed.map { result in
                        [
                            result.store, result.scenario, Self.verdictText(result),
                            result.violations.first.map { "\($0.invariant): \($0.summary)" } ?? result.hang?.summary
                                ?? result.failure ?? "",
                        ]
                    })
            }
            problemsHTML(failed, rerun: rerun, into: &page)
        }
        let charts = charts()
        if !charts.isEmpty {
            page.heading("Charts", id: "charts")
            for chart in charts { page.chart(chart) }
        }
        page.heading("Results", id: "results")
        if results.contains(where: { $0.sweep != nil }) {
            page.preformatted(
                sweepTable(baseline: nil).split(separator: "\n", omittingEmptySubsequences: false).map(String.init))
        }
        for block in view.blocks() {
            let title = block.title.map { "\($0) — \(block.heading)" } ?? block.heading
            page.heading(title, level: 3, id: "table-" + HTMLPage.anchor(title, taken: []))
            page.table(block.header, block.rows)
        }
        let coverage = view.coverage(markdown: false)
        if !coverage.isEmpty { page.preformatted(coverage.split(separator: "\n").map(String.init), label: "Coverage") }
        let notes = view.notes() + repeatNotes() + (metadata.exploration ?? [])
        if !notes.isEmpty {
            page.heading("Notes", id: "notes")
            page.list(notes)
        }
        if let comparison {
            page.heading("Against the baseline", id: "baseline")
            page.preformatted(comparison.table().split(separator: "\n").map(String.init))
        }
        page.heading("The run", id: "run")
        page.facts(metadata.facts)
        return page.render(subtitle: summary)
    }

    /// Each run that did not pass: its violations (events, interleaving, replay), its hang or crash.
    func problemsHTML(_ failed: [ScenarioResult], rerun: (ScenarioResult) -> String?, into page: inout HTMLPage) {
        for result in failed {
            let which =
                "\(result.store) × \(result.scenario)" + (result.repeatIndex.map { ", repeat \($0)" } ?? "")
            let known = result.known ?? []
            var shown: Set<[String]> = []
            for violation in result.violations where !known.contains(where: { $0.invariant == violation.invariant }) {
                page.openProblem("\(which): \(violation.invariant)")
                page.paragraph(
                    violation.summary
                        + (violation.occurrences > 1 ? " (\(violation.occurrences) times in the run)" : "")
                        + " — seed \(violation.seed)")
                Self.traceHTML(violation.trace, shown: &shown, into: &page)
                if let command = rerun(result) { page.command(command, label: "Run it again") }
                page.closeProblem()
            }
            if let hang = result.hang {
                page.openProblem("\(which): hung")
                page.paragraph(hang.summary)
                if let detail = hang.detail { page.paragraph(detail) }
                if let command = rerun(result) { page.command(command, label: "Run it again") }
                page.closeProblem()
            }
            if let failure = result.failure {
                page.openProblem("\(which): \(result.verdict.rawValue)")
                page.paragraph(failure)
                if let command = rerun(result) { page.command(command, label: "Run it again") }
                page.closeProblem()
            }
        }
        if let expectations {
            page.list(expectations.stale.map { Expectations.describe($0, file: expectations.file) })
        }
    }

    /// A violation's trace: its events first, then each labelled part an exploration adds (the
    /// program, the interleaving table) as it is, and its replay line as a command to copy. A part
    /// already in `shown` (another invariant the same schedule broke) is named, not repeated.
    static func traceHTML(_ trace: [String], shown: inout Set<[String]>, into page: inout HTMLPage) {
        var label = "Events, oldest first"
        var lines: [String] = []
        func flush() {
            defer { lines = [] }
            guard !lines.isEmpty else { return }
            if label != "Events, oldest first", !shown.insert([label] + lines).inserted {
                page.paragraph("\(label): as above.", className: "label")
                return
            }
            page.preformatted(lines, label: label)
        }
        for line in trace {
            if line.hasPrefix("replay: ") {
                flush()
                let command = String(line.dropFirst("replay: ".count))
                if shown.insert(["replay", command]).inserted {
                    page.command(command, label: "Replay this schedule")
                }
            } else if line.hasPrefix("the "), line.hasSuffix(":") {
                flush()
                label = String(line.dropLast()).prefix(1).uppercased() + String(line.dropLast()).dropFirst()
            } else {
                lines.append(line.hasPrefix("  ") && label != "Events, oldest first" ? String(line.dropFirst(2)) : line)
            }
        }
        flush()
    }
}

extension RunMetadata {
    /// The run's metadata as names and values, for a report's last section.
    public var facts: [(String, String)] {
        var facts: [(String, String)] = [
            ("tool", tool), ("command", command), ("date", date),
        ]
        facts.append(("commit", commit ?? "not recorded (not run from a git checkout)"))
        facts += [
            ("machine", "\(cores) cores" + (cpuModel.map { ", \($0)" } ?? "")), ("system", system),
            ("sample clock", sampleClock ?? "not recorded"),
            ("allocations", allocationCounting.isEmpty ? "not recorded" : allocationCounting),
        ]
        if let execution { facts.append(("execution", execution)) }
        if let transport { facts.append(("transport", transport)) }
        if let repeats { facts.append(("repeats", String(repeats))) }
        return facts
    }
}
