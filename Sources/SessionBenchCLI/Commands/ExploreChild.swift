import ArgumentParser
import Foundation
import SessionBench
import SessionContract
import SessionOracle
import Synchronization

/// The process `explore` starts for each store: the controlled executor installed before any
/// task exists, the exploration driven from the main thread, one JSON line of what it found on
/// standard output. A store that blocks the driving thread, or crashes, takes only this process.
public enum ExploreChild {
    static let command = "explore-run"

    /// What a child found, as it writes it.
    struct Outcome: Codable, Sendable {
        var schedules: Int
        var steps: Int
        var seconds: Double
        var uncontrolledJobs: Int
        /// The first failing schedule (or, replaying, the schedule played).
        var schedule: String?
        var failingAt: Int?
        var end: String?
        var violations: [Violation]
        /// Of the failing or replayed schedule, in hexadecimal.
        var digest: String?
        /// The printed schedule's preemptions; for a failure, shrunk from the schedule as found,
        /// whose preemptions and steps follow, with the schedules shrinking tried.
        var preemptions: Int?
        /// The tasks the printed schedule held (PCT's n).
        var tasks: Int?
        var foundPreemptions: Int?
        var foundSteps: Int?
        var shrinkTried: Int?
        /// The schedule that broke an invariant, a column per caller (``Exploration/Run/interleaving(rows:columns:)``).
        var interleaving: [String]?
        /// The lifecycle transitions the schedules drove, together.
        var coverage: LifecycleCoverage?
        /// How many cancellations landed at each point of the calls they cancelled (`generated`).
        var cancelPoints: [String: Int]?
        /// The generated program the failing schedule ran (`generated`), a line per caller and round.
        var program: [String]?
        /// Set by the parent when the child did not finish: hung, crashed, or could not run.
        var problem: String?
        var verdict: ScenarioResult.Verdict?
        /// Invariants broken that the store declares it breaks, by id (`I6`): the verdict is
        /// `known` when nothing else broke, as in `compare`.
        var known: [Invariant]?
        /// `dfs`: whether the search covered every schedule of the program, and how many
        /// schedules it stopped early as reorderings of ones it ran (the reduction).
        var exhausted: Bool?
        var pruned: Int?
    }

    /// When the process was started as an explore child: runs it and exits. Otherwise returns at
    /// once. Call first thing in `main`, before any task: the controlled executor can only be made
    /// the default one then.
    public static func runIfChild(_ arguments: [String]) {
        guard arguments.first == command else { return }
        Lifeline.watch()
        let options: ExploreOptions
        let plan: ExplorePlan
        do {
            options = try ExploreOptions.parse(Array(arguments.dropFirst()))
            plan = try options.plan()
        } catch {
            // The parent prints this line as its own error.
            let text = (error as? UsageError)?.description ?? ExploreOptions.message(for: error)
            FileHandle.standardError.write(Data((text + "\n").utf8))
            exit(ExitStatus.usage.rawValue)
        }
        guard let name = plan.stores.first, let store = StoreRegistry.named(name), ControlledExecution.install() else {
            FileHandle.standardError.write(Data("session-bench \(command): no store, or no controlled executor\n".utf8))
            exit(ExitStatus.usage.rawValue)
        }
        var exploration = Exploration(
            store: store, scenario: plan.scenario, strategy: plan.strategy, seed: plan.seed, depth: plan.depth)
        exploration.job = plan.job
        exploration.jobs = plan.jobs
        exploration.reduces = plan.reduces
        // A wait on the scheduler's thread that nothing can end stops the process where it
        // stands: reported as the deadlock it is, with the schedule that reached it.
        let finished = Mutex(0)
        ControlledExecution.onBlocked = { call, choices in
            emit(blockedOutcome(call, choices, plan: plan, finished: finished.withLock { $0 }))
        }
        let share = Exploration.share(of: plan.schedules ?? 1_000, job: plan.job, jobs: plan.jobs)
        var outcome: Outcome
        if let schedule = plan.replay {
            let run = exploration.replay(schedule)
            outcome = Outcome(
                schedules: 1, steps: run.schedule.choices.count, seconds: 0, uncontrolledJobs: run.uncontrolledJobs,
                schedule: run.schedule.description, failingAt: nil, end: describe(run.end), violations: run.violations,
                digest: Self.finished(run.end) ? String(run.digest, radix: 16) : nil)
            outcome.preemptions = run.preemptions
            outcome.tasks = run.tasks
            outcome.known = run.known.isEmpty ? nil : run.known.sorted { $0.rawValue < $1.rawValue }
            if !run.violations.isEmpty {
                outcome.interleaving = run.interleaving()
                outcome.program = run.program.isEmpty ? nil : run.program
            }
            if case .diverged = run.end {
                outcome.verdict = .error
                outcome.problem = "the schedule does not replay: it \(describe(run.end))"
            }
        } else {
            let limit = plan.seconds.map { DurationText.duration(seconds: $0) }
            let found = exploration.explore(
                until: { schedules, elapsed in
                    if let limit { return schedules == 0 || elapsed < limit }
                    return schedules < share
                }, progress: { outcome in finished.withLock { $0 = outcome.schedules } })
            // The failure printed is the found one shrunk to its fewest preemptions.
            // A generated program first loses the steps the failure does not need. A candidate
            // that blocks the scheduler's thread is no smaller failure: the one found is printed.
            ControlledExecution.onBlocked = { _, _ in
                emit(Self.outcome(found, failing: found.failing, shrunk: nil, exploration: exploration, plan: plan))
            }
            let smaller = found.failing.map { $0.uncontrolledJobs == 0 ? exploration.shrinkProgram($0) : $0 }
            let shrunk = smaller.flatMap { $0.uncontrolledJobs == 0 ? exploration.shrink($0) : nil }
            outcome = Self.outcome(
                found, failing: shrunk?.run ?? smaller, shrunk: shrunk, exploration: exploration, plan: plan)
        }
        emit(outcome)
    }

    /// What an exploration found, its failure (shrunk, when `shrunk`) printed.
    static func outcome(
        _ found: Exploration.Outcome, failing: Exploration.Run?, shrunk: Exploration.Shrunk?,
        exploration: Exploration, plan: ExplorePlan
    ) -> Outcome {
        var outcome = Outcome(
            schedules: found.schedules, steps: found.steps, seconds: found.seconds,
            uncontrolledJobs: found.uncontrolledJobs, schedule: failing?.schedule.description,
            failingAt: found.failingAt, end: failing.map { describe($0.end) },
            violations: failing?.violations ?? [],
            digest: failing.flatMap { Self.finished($0.end) ? String($0.digest, radix: 16) : nil })
        outcome.known = found.known.isEmpty ? nil : found.known.sorted { $0.rawValue < $1.rawValue }
        if plan.strategy == .dfs {
            outcome.exhausted = found.exhausted
            outcome.pruned = found.pruned
        }
        if found.nondeterministic {
            outcome.verdict = .error
            outcome.problem =
                "a schedule replayed down the search's path held other jobs than it did before: the program "
                + "does not do the same thing twice, so dfs cannot cover it (random and pct still judge it)"
        }
        outcome.coverage = Exploration.countsCoverage(exploration.scenario) ? found.coverage : nil
        outcome.cancelPoints = found.cancelPoints.isEmpty ? nil : found.cancelPoints
        if let shrunk {
            outcome.preemptions = shrunk.run.preemptions
            outcome.tasks = shrunk.run.tasks
            outcome.foundPreemptions = shrunk.foundPreemptions
            outcome.foundSteps = shrunk.foundSteps
            outcome.shrinkTried = shrunk.tried
        }
        if let failing, !failing.violations.isEmpty {
            outcome.interleaving = failing.interleaving()
            outcome.program = failing.program.isEmpty ? nil : failing.program
        }
        return outcome
    }

    /// A schedule that blocked the scheduler's thread in a wait nothing can end (`choices`: what it
    /// chose up to there; `nil`, a replay that no longer fits), after `finished` schedules.
    static func blockedOutcome(_ call: String, _ choices: [Int]?, plan: ExplorePlan, finished: Int) -> Outcome {
        let uncontrolled = ControlledExecution.uncontrolledJobs
        guard let choices else {
            var outcome = Outcome(
                schedules: finished + 1, steps: 0, seconds: 0, uncontrolledJobs: uncontrolled, schedule: nil,
                failingAt: nil, end: nil, violations: [])
            outcome.verdict = .error
            outcome.problem = "the schedule does not replay: it diverged before the store called \(call)"
            return outcome
        }
        let index = plan.replay == nil ? plan.job + finished * plan.jobs : 0
        let schedule =
            plan.replay.map { ScheduleText(strategy: $0.strategy, seed: $0.seed, choices: choices) }
            ?? ScheduleText(
                strategy: plan.strategy, seed: plan.strategy == .dfs ? 0 : Exploration.scheduleSeed(plan.seed, index),
                choices: choices)
        let violation = Violation(
            invariant: .noHang, scenario: plan.scenario.name, seed: schedule.seed,
            summary: "\(call) on the scheduler's only thread, which runs every job: nothing can signal it (deadlock)",
            trace: ["after \(choices.count) step(s)"], occurrences: 1)
        return Outcome(
            schedules: plan.replay == nil ? finished + 1 : 1, steps: choices.count, seconds: 0,
            uncontrolledJobs: uncontrolled, schedule: schedule.description,
            failingAt: plan.replay == nil ? index + 1 : nil,
            end: "deadlocked after \(choices.count) steps: the store called \(call) on the scheduler's thread",
            violations: [violation])
    }

    /// Writes what the child found, one JSON line, and ends the process.
    static func emit(_ outcome: Outcome) -> Never {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let line = (try? encoder.encode(outcome)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
        exit(0)
    }

    /// Whether the schedule's body returned (its digest says what it did).
    static func finished(_ end: ScheduleEnd) -> Bool {
        if case .finished = end { return true }
        return false
    }

    static func describe(_ end: ScheduleEnd) -> String {
        switch end {
        case .finished(let steps): "finished after \(steps) steps"
        case .deadlocked(let steps): "deadlocked after \(steps) steps"
        case .stepLimit(let steps): "still running after \(steps) steps"
        case .diverged(let steps):
            "diverged at step \(steps): it does not fit this build or store (a choice past the jobs held, or choices left over)"
        }
    }

    /// How long a child may take before it counts as hung: its time, or its schedules at a
    /// generous 20 µs per call each, and the plan's patience more (a replay: one schedule).
    static func budget(_ plan: ExplorePlan) -> Duration {
        let perSchedule = Double(plan.scenario.tasks * plan.scenario.rounds) * 20e-6
        let seconds =
            plan.replay != nil ? perSchedule : plan.seconds ?? Double(plan.schedules ?? 1_000) * perSchedule
        return DurationText.duration(seconds: seconds + plan.patience)
    }

    /// Runs `store`'s exploration in `jobs` child processes at once, each its share of the
    /// schedules, and puts together what they found: every schedule counted, the wall time of the
    /// slowest, the failure at the lowest schedule index (the one a single process would have
    /// stopped at), and any child's hang, crash or escaped work.
    static func run(store: String, plan: ExplorePlan, jobs: Int) async throws -> Outcome {
        guard jobs > 1 else { return try await run(store: store, plan: plan, job: 0) }
        let started = ContinuousClock.now
        let outcomes = try await withThrowingTaskGroup(of: Outcome.self) { group in
            for job in 0..<jobs { group.addTask { try await run(store: store, plan: plan, job: job) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        return merged(outcomes, seconds: (ContinuousClock.now - started).secondsValue)
    }

    /// What `jobs` children found, as one exploration.
    static func merged(_ outcomes: [Outcome], seconds: Double) -> Outcome {
        let failing = outcomes.filter { $0.failingAt != nil }.min { $0.failingAt! < $1.failingAt! }
        let troubled = outcomes.first { $0.verdict != nil || $0.problem != nil }
        var outcome = failing ?? troubled ?? outcomes[0]
        if failing != nil, let troubled, troubled.verdict == .hung || troubled.verdict == .crashed {
            outcome.problem = troubled.problem
        }
        if failing == nil, let troubled {
            outcome.verdict = troubled.verdict
            outcome.problem = troubled.problem
        }
        outcome.schedules = outcomes.reduce(0) { $0 + $1.schedules }
        outcome.steps = outcomes.reduce(0) { $0 + $1.steps }
        outcome.uncontrolledJobs = outcomes.map(\.uncontrolledJobs).max() ?? 0
        let known = Set(outcomes.flatMap { $0.known ?? [] })
        outcome.known = known.isEmpty ? nil : known.sorted { $0.rawValue < $1.rawValue }
        outcome.seconds = seconds
        var coverage = LifecycleCoverage()
        for other in outcomes.compactMap(\.coverage) { coverage.merge(other) }
        outcome.coverage = outcomes.contains { $0.coverage != nil } ? coverage : nil
        let points = outcomes.compactMap(\.cancelPoints).reduce(into: [String: Int]()) { total, each in
            total.merge(each, uniquingKeysWith: +)
        }
        outcome.cancelPoints = points.isEmpty ? nil : points
        return outcome
    }

    /// Runs job `job` of `store`'s exploration in a child process and reads what it found.
    static func run(store: String, plan: ExplorePlan, job: Int) async throws -> Outcome {
        let child: Child
        // The same hashes in every process: a store that resumes its waiters from a dictionary
        // resumes them in the same order when the schedule is replayed.
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_DETERMINISTIC_HASHING"] = "1"
        do {
            child = try Child.spawn(
                executable: IsolatedRun.executablePath, arguments: plan.arguments(for: store, job: job),
                environment: environment)
        } catch {
            throw UsageError("explore: could not start the exploring process: \(error)")
        }
        child.closeInput()
        let collected = Mutex<(lines: [String], errors: [String])>(([], []))
        let reader = Thread { child.readLines { line in collected.withLock { $0.lines.append(line) } } }
        reader.start()
        let errorReader = Thread {
            child.readErrorLines { line in
                collected.withLock { state in
                    state.errors.append(line)
                    if state.errors.count > 50 { state.errors.removeFirst() }
                }
            }
        }
        errorReader.start()
        let (end, timedOut) = await child.end(
            by: ContinuousClock.now + budget(plan), polling: .milliseconds(5), readers: [reader, errorReader])
        let (lines, errors) = collected.withLock { ($0.lines, $0.errors) }
        if let last = lines.last, case .exited(0)? = end,
            let outcome = try? JSONDecoder().decode(Outcome.self, from: Data(last.utf8))
        {
            return outcome
        }
        if case .exited(let status)? = end, status == ExitStatus.usage.rawValue {
            let line = errors.last ?? "explore: the exploring process refused its plan"
            throw UsageError(line.hasPrefix("session-bench: error: ") ? String(line.dropFirst(22)) : line)
        }
        var outcome = Outcome(
            schedules: 0, steps: 0, seconds: 0, uncontrolledJobs: 0, schedule: nil, failingAt: nil, end: nil,
            violations: [])
        let trap = TrapMessage.find(in: errors)
        if timedOut {
            outcome.verdict = .hung
            outcome.problem =
                "the exploring process did not finish in \(InputRange.text(budget(plan).secondsValue)) s and was killed: "
                + "the store may have blocked the scheduler's only thread (a lock or semaphore waited on across an "
                + "await), or this machine ran the schedules far slower than expected (a debug build, or a busy machine)"
        } else {
            outcome.verdict = .crashed
            outcome.problem =
                "the exploring process ended: \(end.map { "\($0)" } ?? "unknown")"
                + (trap.map { "; it had printed: \($0)" } ?? "")
        }
        return outcome
    }
}
