import Foundation
import SessionBench
import SessionOracle

/// What `explore` prints: a line per store (its verdict, schedules run, how fast), then each
/// violation found with its trace and the command that replays the schedule that broke it.
struct ExploreReport {
    let plan: ExplorePlan
    private(set) var rows: [(store: String, outcome: ExploreChild.Outcome)] = []

    init(plan: ExplorePlan) { self.plan = plan }

    var heading: String {
        let what =
            plan.replay.map { "replaying a \($0.strategy.rawValue) schedule of seed \($0.seed)" }
            ?? Self.strategy(plan)
        return
            "explore \(plan.scenario.name) — \(plan.scenario.tasks) callers, \(plan.scenario.rounds) \(Self.rounds(plan.scenario.kind)), \(what)"
    }

    /// How the schedules were picked, for the heading.
    static func strategy(_ plan: ExplorePlan) -> String {
        switch plan.strategy {
        case .pct: "PCT, depth \(plan.depth), seed \(plan.seed)"
        case .random: "random walk, seed \(plan.seed)"
        case .dfs:
            plan.reduces
                ? "depth-first, every schedule (sleep-set reduction)" : "depth-first, every schedule (no reduction)"
        }
    }

    /// `dfs`: whether the search covered the program, and what it pruned.
    static func search(_ outcome: ExploreChild.Outcome) -> String? {
        guard let exhausted = outcome.exhausted, outcome.verdict == nil, outcome.violations.isEmpty else { return nil }
        let pruned =
            outcome.pruned.map { $0 > 0 ? " and \($0) stopped early as reorderings of steps that commute" : "" } ?? ""
        return exhausted
            ? "every schedule of this program explored: \(outcome.schedules) run to the end\(pruned)"
            : "search not finished: \(outcome.schedules) schedule(s) run\(pruned); give it more --for or --schedules"
    }

    mutating func add(store: String, _ outcome: ExploreChild.Outcome) { rows.append((store, outcome)) }

    /// pass, violated (with ids), known (with ids: broken only as the store declares, as `compare`
    /// says it), UNCONTROLLED, hung or crashed.
    func verdict(_ outcome: ExploreChild.Outcome) -> String {
        if let verdict = outcome.verdict { return verdict.rawValue }
        if outcome.uncontrolledJobs > 0 { return "UNCONTROLLED" }
        if !outcome.violations.isEmpty {
            return "violated " + outcome.violations.map { "I\($0.invariant.rawValue)" }.joined(separator: ",")
        }
        if let known = outcome.known, !known.isEmpty {
            return "known " + known.map(\.id).joined(separator: ",")
        }
        return "pass"
    }

    /// Whether any store broke an invariant, hung or crashed (an UNCONTROLLED store has no verdict).
    var anyViolated: Bool {
        rows.contains {
            $0.outcome.verdict == .hung || $0.outcome.verdict == .crashed
                || (!$0.outcome.violations.isEmpty && $0.outcome.uncontrolledJobs == 0)
        }
    }

    /// Whether a run could not be carried out (a replayed schedule that does not fit).
    var anyError: Bool { rows.contains { $0.outcome.verdict == .error } }

    func text() -> String {
        var lines = [heading]
        let table: [[String]] =
            [["store", "verdict", "schedules", "first failing", "schedules/s"]]
            + rows.map { row in
                let outcome = row.outcome
                let rate = outcome.seconds > 0 ? Self.rate(Double(outcome.schedules) / outcome.seconds) : "—"
                return [
                    row.store, verdict(outcome), String(outcome.schedules), outcome.failingAt.map { "#\($0)" } ?? "—",
                    rate,
                ]
            }
        let widths = table[0].indices.map { column in table.map { $0[column].count }.max() ?? 0 }
        for row in table {
            let cells = row.enumerated().map {
                $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0)
            }
            lines.append(cells.joined(separator: "  ").trimmingCharacters(in: .whitespaces))
        }
        let searched = rows.compactMap { row in Self.search(row.outcome).map { "  \(row.store): \($0)" } }
        if plan.replay == nil, !searched.isEmpty {
            lines.append("search:")
            lines += searched
        }
        let covered = rows.compactMap { row in
            row.outcome.coverage.map { coverage in
                let offers = StoreRegistry.named(row.store).map(StoreOffers.init) ?? []
                return "  \(row.store): " + coverage.summary(synchronousRead: offers.contains(.synchronousRead))
            }
        }
        if plan.replay == nil, !covered.isEmpty {
            lines.append("coverage (lifecycle transitions the schedules drove, as compare counts them):")
            lines += covered
        }
        let cancelled = rows.compactMap { row in
            row.outcome.cancelPoints.map { points in
                "  \(row.store): "
                    + CancelPoint.allCases.map { "\($0.rawValue) \(points[$0.rawValue] ?? 0)" }.joined(separator: ", ")
            }
        }
        if plan.replay == nil, !cancelled.isEmpty {
            lines.append("cancellations, by where they landed in the call they cancelled:")
            lines += cancelled
        }
        for row in rows {
            let outcome = row.outcome
            if let problem = outcome.problem { lines.append("\(row.store): \(problem)") }
            if outcome.uncontrolledJobs > 0 {
                lines.append(
                    "\(row.store): UNCONTROLLED — \(outcome.uncontrolledJobs) job(s) came from threads the scheduler does "
                        + "not drive (a block on a Dispatch queue, a Thread): explore has no verdict for this store; "
                        + "compare and stress do")
                continue
            }
            guard !outcome.violations.isEmpty else {
                // A replay says what it did, pass or not.
                if plan.replay != nil {
                    if outcome.problem == nil, let end = outcome.end {
                        lines.append("\(row.store): the schedule \(end)")
                    }
                    if let digest = outcome.digest { lines.append("  ledger digest: \(digest)") }
                }
                continue
            }
            if let end = outcome.end { lines.append("\(row.store): the schedule \(end)\(Self.preemptions(outcome))") }
            for violation in outcome.violations {
                lines.append("  \(violation.invariant): \(violation.summary)")
                for step in violation.trace.prefix(6) { lines.append("    \(step)") }
            }
            if let program = outcome.program {
                lines.append("  the program (shrunk with the schedule):")
                lines += program.map { "    \($0)" }
            }
            if let table = outcome.interleaving, !table.isEmpty {
                lines.append("  the interleaving (g3: the token of generation 3):")
                lines += table.map { "    \($0)" }
            }
            if let text = outcome.schedule, let schedule = ScheduleText(text) {
                lines.append("  replay: \(plan.replayCommand(row.store, schedule))")
            }
            if let digest = outcome.digest { lines.append("  ledger digest: \(digest)") }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `, 11 tasks, 2 preemptions (shrunk from 9 preemptions and 61 steps, 40 schedules tried)`.
    static func preemptions(_ outcome: ExploreChild.Outcome) -> String {
        guard let preemptions = outcome.preemptions else { return "" }
        let counted =
            (outcome.tasks.map { ", \($0) tasks" } ?? "") + ", \(preemptions) preemption\(preemptions == 1 ? "" : "s")"
        guard let found = outcome.foundPreemptions, let steps = outcome.foundSteps, let tried = outcome.shrinkTried
        else {
            return counted
        }
        return counted + " (shrunk from \(found) preemption\(found == 1 ? "" : "s") and \(steps) steps, "
            + "\(tried) schedule\(tried == 1 ? "" : "s") tried)"
    }

    /// What a round of `kind` is, for the heading.
    static func rounds(_ kind: Scenario.Kind) -> String {
        switch kind {
        case .rejectionStorm: "401 storms"
        case .generated, .sessionStates, .family, .stepUp, .crashRestart: "programs"
        case .steadyReads: "rounds"
        case .sharedStorage: "rounds of a storm and an expiry"
        default: "expiries"
        }
    }

    static func rate(_ value: Double) -> String {
        value >= 1_000 ? String(format: "%.1fk", value / 1_000) : String(format: "%.0f", value)
    }
}
