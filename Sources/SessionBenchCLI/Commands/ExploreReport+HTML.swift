import Foundation
import SessionBench
import SessionOracle

/// `explore --output report.html`: the same report as the terminal's, as one page a reviewer
/// opens from a CI artifact — each failing store's violations with their events, the program,
/// the interleaving and the command that replays the schedule, then every store's verdict.
extension ExploreReport {
    func html(metadata: RunMetadata = .current(command: "explore")) -> String {
        var page = HTMLPage(title: "session-bench explore")
        let failing = rows.filter { !$0.outcome.violations.isEmpty && $0.outcome.uncontrolledJobs == 0 }
        let unjudged = rows.filter { $0.outcome.verdict != nil }
        let summary =
            heading + " — "
            + (failing.isEmpty && unjudged.isEmpty
                ? "no store broke the contract"
                : "\(failing.count + unjudged.count) of \(rows.count) store(s) did not pass")
        if !failing.isEmpty || !unjudged.isEmpty {
            page.heading("What failed", id: "problems")
        }
        for row in failing {
            let outcome = row.outcome
            page.openProblem(
                "\(row.store): " + outcome.violations.map { "\($0.invariant)" }.joined(separator: ", "))
            if let end = outcome.end {
                page.paragraph(
                    "Found at schedule #\(outcome.failingAt ?? 0); the schedule \(end)\(Self.preemptions(outcome)).")
            }
            for violation in outcome.violations {
                page.paragraph("\(violation.invariant): \(violation.summary)")
                page.preformatted(Array(violation.trace.prefix(12)), label: "Events, oldest first")
            }
            if let program = outcome.program {
                page.preformatted(program, label: "The program (shrunk with the schedule)")
            }
            if let table = outcome.interleaving, !table.isEmpty {
                page.preformatted(table, label: "The interleaving (g3: the token of generation 3)")
            }
            if let text = outcome.schedule, let schedule = ScheduleText(text) {
                page.command(plan.replayCommand(row.store, schedule), label: "Replay this schedule")
            }
            if let digest = outcome.digest { page.paragraph("Ledger digest: \(digest)") }
            page.closeProblem()
        }
        for row in unjudged {
            page.openProblem("\(row.store): \(verdict(row.outcome))")
            page.paragraph(row.outcome.problem ?? "the store's process did not finish its schedules")
            page.closeProblem()
        }
        page.heading("Stores", id: "stores")
        page.table(
            ["store", "verdict", "schedules", "first failing", "schedules/s"],
            rows.map { row in
                let outcome = row.outcome
                return [
                    row.store, verdict(outcome), String(outcome.schedules), outcome.failingAt.map { "#\($0)" } ?? "—",
                    outcome.seconds > 0 ? Self.rate(Double(outcome.schedules) / outcome.seconds) : "—",
                ]
            })
        let searched = rows.compactMap { row in Self.search(row.outcome).map { "\(row.store): \($0)" } }
        if plan.replay == nil, !searched.isEmpty {
            page.heading("Search", level: 3, id: "search")
            page.list(searched)
        }
        let covered = rows.compactMap { row in
            row.outcome.coverage.map { coverage in
                let offers = StoreRegistry.named(row.store).map(StoreOffers.init) ?? []
                return "\(row.store): " + coverage.summary(synchronousRead: offers.contains(.synchronousRead))
            }
        }
        if plan.replay == nil, !covered.isEmpty {
            page.heading("Coverage", level: 3, id: "coverage")
            page.paragraph("Lifecycle transitions the schedules drove, as compare counts them.")
            page.list(covered)
        }
        let notes = rows.compactMap { row -> String? in
            if row.outcome.uncontrolledJobs > 0 {
                return "\(row.store): UNCONTROLLED — \(row.outcome.uncontrolledJobs) job(s) came from threads the "
                    + "scheduler does not drive: explore has no verdict for this store; compare and stress do"
            }
            return row.outcome.problem.map { "\(row.store): \($0)" }
        }
        if !notes.isEmpty {
            page.heading("Notes", id: "notes")
            page.list(notes)
        }
        var metadata = metadata
        metadata.allocationCounting = "none: explore counts no allocations"
        page.heading("The run", id: "run")
        page.facts(metadata.facts)
        return page.render(subtitle: summary)
    }
}
