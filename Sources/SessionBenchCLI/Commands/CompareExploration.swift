import Foundation
import SessionBench
import SessionContract
import SessionOracle

/// The systematic search in `compare`'s verdict: after the paced runs, each store's scenarios that
/// `explore` drives are explored on the controlled scheduler for a fixed number of seeded
/// schedules, and a schedule that breaks an invariant joins that store × scenario's result as a
/// violation, with the interleaving and the command that replays it. The paced runs find what the
/// operating system happens to interleave; this finds what a few schedules chosen on purpose do.
struct CompareExploration {
    /// Schedules per store × scenario.
    var schedules: Int
    /// Processes exploring at once.
    var parallel = max(1, min(4, ProcessInfo.processInfo.activeProcessorCount))

    /// The callers and rounds of each exploration: `explore`'s own defaults, where its searches
    /// find every wrong store in the tests within a few hundred schedules.
    static let tasks = 4
    static let rounds = 2
    /// Seconds an exploring process may overrun before it counts as blocked: a store that blocks
    /// the scheduler's one thread is judged by its paced run, and the run goes on.
    static let patience = 10.0

    /// What `explore` runs for `scenario`: its kind's preset at explore's size, with the run's
    /// seed; `nil` for a scenario the controlled scheduler does not drive.
    static func explored(_ scenario: Scenario) -> Scenario? {
        explored(kind: scenario.kind, name: scenario.name, seed: scenario.seed)
    }

    /// What `explore` runs for a result of `kind` named `name` seeded `seed`: the preset of that
    /// name (`crash-restart:json-file` is `crash-restart`'s), else its kind's first.
    static func explored(kind: Scenario.Kind, name: String, seed: UInt64) -> Scenario? {
        let base = String(name.prefix { $0 != ":" })
        guard
            var preset = ScenarioCatalog.all.first(where: { $0.kind == kind && $0.name == base })
                ?? ScenarioCatalog.all.first(where: { $0.kind == kind }),
            Exploration.drives(preset)
        else { return nil }
        preset.tasks = tasks
        preset.rounds = rounds
        preset.accounts = 1
        preset.seed = seed
        return preset
    }

    /// The line the report and the dry run carry.
    func summary(seeds: [UInt64]) -> String {
        "explore: \(schedules) seeded schedule(s) per store × scenario on the controlled scheduler "
            + "(\(Self.tasks) callers, \(Self.rounds) rounds, seed \(seeds.map(String.init).joined(separator: ","))); "
            + "a failing schedule joins the verdict (--no-explore leaves it out)"
    }

    /// Explores every result's store × scenario that the scheduler drives, and folds what it found
    /// into the results; returns the notes for what could not be explored.
    func run(_ results: inout [ScenarioResult], quiet: Bool) async -> [String] {
        let work: [(index: Int, plan: ExplorePlan)] = results.indices.compactMap { index in
            let result = results[index]
            guard result.repeatIndex ?? 0 == 0, result.verdict != .notRun,
                let explored = Self.explored(kind: result.kind, name: result.scenario, seed: result.seed)
            else { return nil }
            return (
                index,
                ExplorePlan(
                    stores: [result.store], scenario: explored, strategy: .random, seed: result.seed, depth: 3,
                    schedules: schedules, seconds: nil, replay: nil, patience: Self.patience)
            )
        }
        guard !work.isEmpty else { return [] }
        let progress = ProgressLines(total: work.count, quiet: quiet)
        let outcomes = await withTaskGroup(of: (Int, ExplorePlan, ExploreChild.Outcome?).self) { group in
            var next = 0
            var outcomes: [(Int, ExplorePlan, ExploreChild.Outcome?)] = []
            func start() {
                guard next < work.count else { return }
                let (index, plan) = work[next]
                next += 1
                group.addTask {
                    let outcome = try? await ExploreChild.run(store: plan.stores[0], plan: plan, job: 0)
                    return (index, plan, outcome)
                }
            }
            for _ in 0..<parallel { start() }
            for await finished in group {
                outcomes.append(finished)
                let (index, plan, outcome) = finished
                progress.record(
                    "explore: \(results[index].store) × \(results[index].scenario): "
                        + (outcome.map { Self.verdict($0, plan) } ?? "could not run"))
                start()
            }
            return outcomes
        }
        var notes: [String] = []
        for (index, plan, outcome) in outcomes.sorted(by: { $0.0 < $1.0 }) {
            let which = "\(results[index].store) × \(results[index].scenario)"
            guard let outcome else {
                notes.append("explore: \(which): the exploring process could not run; judged by the paced run alone")
                continue
            }
            if let note = Self.fold(outcome, plan, into: &results[index]) { notes.append("explore: \(which): \(note)") }
        }
        return notes
    }

    /// A short verdict for the progress line.
    static func verdict(_ outcome: ExploreChild.Outcome, _ plan: ExplorePlan) -> String {
        if let verdict = outcome.verdict {
            return "\(outcome.schedules) schedule(s), not explored (\(verdict.rawValue))"
        }
        if outcome.uncontrolledJobs > 0 { return "not explored (work ran off the scheduler)" }
        if !outcome.violations.isEmpty {
            return "violated " + outcome.violations.map(\.invariant.id).joined(separator: ",")
                + " at schedule #\(outcome.failingAt ?? 0)"
        }
        return "\(outcome.schedules) schedule(s), no violation"
    }

    /// Folds one exploration into its result: a failing schedule's violations join the result's
    /// (a pass becomes a violation); an exploration that could not judge the store leaves the
    /// result as the paced run made it and says why in the note returned.
    static func fold(_ outcome: ExploreChild.Outcome, _ plan: ExplorePlan, into result: inout ScenarioResult)
        -> String?
    {
        if outcome.uncontrolledJobs > 0 {
            return "\(outcome.uncontrolledJobs) job(s) came from threads the scheduler does not drive "
                + "(a Dispatch queue, a Thread): not explored, judged by the paced run alone"
        }
        if let problem = outcome.problem, outcome.violations.isEmpty {
            // A store that blocks the scheduler's one thread cannot be explored; the paced run,
            // with its own watchdog, says whether it hangs.
            return "not explored: \(problem); judged by the paced run alone"
        }
        guard !outcome.violations.isEmpty else { return nil }
        var lines: [String] = []
        if let program = outcome.program {
            lines.append("the program:")
            lines += program.map { "  " + $0 }
        }
        if let table = outcome.interleaving, !table.isEmpty {
            lines.append("the interleaving (g3: the token of generation 3):")
            lines += table.map { "  " + $0 }
        }
        if let text = outcome.schedule, let schedule = ScheduleText(text) {
            lines.append("replay: \(plan.replayCommand(result.store, schedule))")
        }
        let found = outcome.failingAt.map { "schedule #\($0)" } ?? "a schedule"
        let known = Set(result.violations.map(\.invariant))
        for violation in outcome.violations {
            let explored = Violation(
                invariant: violation.invariant, scenario: result.scenario, seed: violation.seed,
                summary: "explore, \(found) of \(plan.scenario.tasks) callers × \(plan.scenario.rounds) rounds: "
                    + violation.summary,
                trace: Array(violation.trace.prefix(6)) + lines, occurrences: violation.occurrences)
            // One record per invariant: the paced run's, when it found it too, else the schedule's.
            if known.contains(violation.invariant) { continue }
            result.violations.append(explored)
        }
        if result.verdict == .pass || result.verdict == .known {
            if result.violations.contains(where: { !known.contains($0.invariant) }) { result.verdict = .violated }
        }
        return nil
    }
}
