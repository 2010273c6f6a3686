import Foundation
import SessionMeasurement
import SessionOracle

/// Human-readable renderings: the terminal table and Markdown.
extension ResultsReport {
    public static func verdictText(_ result: ScenarioResult) -> String {
        switch result.verdict {
        case .pass: "pass"
        case .violated:
            "FAIL "
                + result.violations.map(\.invariant).filter { id in
                    !(result.known ?? []).contains { $0.invariant == id }
                }
                .map(\.id).joined(separator: ",")
                + ((result.known ?? []).isEmpty ? "" : " (+\(result.known!.count) known)")
        case .known: "known " + result.violations.map { $0.invariant.id }.joined(separator: ",")
        case .hung: "HUNG"
        case .crashed: "CRASHED"
        case .error: "ERROR"
        case .notRun: "NOT RUN"
        }
    }

    var scenarioNames: [String] {
        results.map(\.scenario).firstSeen()
    }

    /// The synchronous path's block: how many threads, and the two floors beside it (the plain
    /// load, and the plain load behind the clock read every correct store makes).
    func syncHeading(for scenario: String) -> String? {
        let figures = results.filter { $0.scenario == scenario }.compactMap(\.syncRead)
        guard !figures.isEmpty else { return nil }
        let threads = Set(figures.map(\.threads)).sorted()
        let count = threads.count == 1 ? "\(threads[0])" : "\(threads.first!)–\(threads.last!)"
        let floors = figures.compactMap(\.plainLoadThroughput).sorted()
        let floor =
            floors.isEmpty
            ? "" : "; a plain load of a thread's own token: \(Format.rate(floors[floors.count / 2])) calls/s"
        let clockedFloors = figures.compactMap(\.clockedLoadThroughput).sorted()
        let clocked =
            clockedFloors.isEmpty
            ? ""
            : "; the same behind the store's clock and a compare: "
                + "\(Format.rate(clockedFloors[clockedFloors.count / 2])) calls/s"
        return "currentToken() on \(count) OS threads at once\(floor)\(clocked)"
    }

    /// What a scenario's block ran with: every run's callers and seed, not the first one's.
    func heading(for scenario: String) -> String {
        let block = results.filter { $0.scenario == scenario }
        let tasks = Set(block.map(\.tasks)).sorted()
        let seeds = Set(block.map(\.seed)).sorted()
        let callers = tasks.count == 1 ? "\(tasks[0]) callers" : "\(tasks.first!)–\(tasks.last!) callers"
        let seed = seeds.count == 1 ? "seed \(seeds[0])" : "\(seeds.count) seeds, \(seeds.first!)…\(seeds.last!)"
        // Steady scenarios: what the async loop itself costs, beside what the stores did through it.
        let ceilings = block.compactMap(\.emptyStoreThroughput).filter { $0 > 0 }.sorted()
        let ceiling =
            ceilings.isEmpty
            ? ""
            : "; the same loop over a store that does nothing: \(Format.rate(ceilings[ceilings.count / 2])) calls/s"
        return "\(callers), \(seed)\(ceiling)"
    }

    /// The terminal table: one block per scenario, stores as rows, then what went wrong.
    public func table() -> String {
        let view = shown()
        var out = ""
        for block in view.blocks() {
            out += block.title.map { "\($0) — \(block.heading)\n" } ?? "\(block.heading)\n"
            out += Format.aligned([block.header] + block.rows) + "\n"
        }
        out += problems(markdown: false)
        out += view.coverage(markdown: false)
        out += (view.notes() + repeatNotes()).map { "note: \($0)\n" }.joined()
        if let comparison { out += "\n" + comparison.table() }
        return out
    }

    /// Markdown tables for a README.
    public func markdown() -> String {
        let view = shown()
        var out = ""
        for block in view.blocks() {
            if let title = block.title {
                out += "\(block.isAspect ? "####" : "###") \(title)\n\n\(block.heading)\n\n"
            } else {
                out += "### \(block.heading)\n\n"
            }
            out += Self.markdownTable(block.header, block.rows)
        }
        let problems = problems(markdown: true)
        if !problems.isEmpty { out += "### Problems\n\n" + problems + "\n" }
        out += view.coverage(markdown: true)
        out += (view.notes() + repeatNotes()).map { "- \($0)\n" }.joined()
        if let comparison { out += "\n" + comparison.markdown() }
        return out
    }

    /// A Markdown table and the blank line after it.
    static func markdownTable(_ columns: [String], _ rows: [[String]]) -> String {
        var out = "| " + columns.joined(separator: " | ") + " |\n"
        out += "|" + columns.map { _ in "---" }.joined(separator: "|") + "|\n"
        for row in rows { out += "| " + row.joined(separator: " | ") + " |\n" }
        return out + "\n"
    }

    /// Violations with their traces, hangs and crashes.
    func problems(markdown: Bool) -> String {
        var lines: [String] = []
        let indent = markdown ? "  - " : "    "
        for result in results where result.verdict != .pass {
            let which =
                result.store + " × " + result.scenario
                + (result.repeatIndex.map { ", pass \($0 + 1) (repeat \($0))" } ?? "")
            let head = markdown ? "- **\(which)**" : which
            let known = result.known ?? []
            for violation in result.violations {
                if let expected = known.first(where: { $0.invariant == violation.invariant }) {
                    lines.append("\(head): known \(violation.invariant.id) (expected: \(expected.reason))")
                    continue
                }
                lines.append("\(head): \(violation)")
                lines += violation.trace.map { indent + $0 }
            }
            if let hang = result.hang {
                lines.append("\(head): hung — \(hang.summary)")
                if let detail = hang.detail { lines.append(indent + detail) }
            }
            if let failure = result.failure { lines.append("\(head): \(result.verdict.rawValue) — \(failure)") }
        }
        if let expectations {
            lines += expectations.stale.map {
                (markdown ? "- " : "") + Expectations.describe($0, file: expectations.file)
            }
        }
        guard !lines.isEmpty else { return "" }
        return (markdown ? "" : "problems:\n") + lines.map { markdown ? $0 : "  " + $0 }.joined(separator: "\n") + "\n"
    }

    func notes() -> [String] {
        var notes: [String] = []
        let overheads = results.filter { $0.kind == .steadyReads }.map(\.harnessOverheadNanoseconds).filter { $0 > 0 }
        if let overhead = overheads.min() {
            notes.append(
                "steady latencies: one call in \(SteadyDriver.batch) timed on its own (sync-read: at a random place in the batch), "
                    + "the timer's bracket cost taken out; timing a sample costs the harness \(Format.nanoseconds(overhead)); "
                    + "clock: \(metadata.sampleClock ?? SampleClock.shared.summary)")
        }
        let anomalies = results.reduce(0) { $0 + $1.clockAnomalies }
        if anomalies > 0 {
            notes.append(
                "\(anomalies) sample(s) ended before they started on the sample clock: counted in clock_anomalies, not recorded"
            )
        }
        let unavailable = results.compactMap(\.allocationNote).filter { $0 != StormFamily.allocationNote }
        if let reason = unavailable.first {
            notes.append("allocations not counted: \(reason)")
        } else {
            if results.contains(where: { $0.allocationCounter != nil }) {
                notes.append("allocations counted by \(Self.allocationCounting(of: results))")
            }
            if results.contains(where: { $0.storeAllocationsPerWaiter != nil }) {
                notes.append(
                    "scale-storm's allocs/op is per waiting caller: the store's own, the caller's task taken out")
            }
            if results.contains(where: { $0.allocationNote == StormFamily.allocationNote }) {
                notes.append("allocs/op is \(StormFamily.allocationNote)")
            }
        }
        let ran = Set(results.map(\.kind))
        notes += ScenarioFamilies.all.flatMap { $0.notes(ran: ran) }
        if results.contains(where: { $0.kind != .steadyReads && $0.persistence == nil }) {
            notes.append("storm latencies include the time the refresh is held at the server while callers pile up")
        }
        notes += metadata.exploration ?? []
        return notes
    }
}
