import ArgumentParser
import Foundation
import SessionBench
import SessionContract

/// `explore`: each store's scenario run over and over on a controlled scheduler, each run in an
/// order a seeded strategy picks, until one breaks the contract; the order that broke it is
/// printed as a schedule string that `--replay` plays back, step for step, in any process.
struct Explore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Explore task interleavings on a controlled scheduler; replay the one that breaks a store.",
        discussion: """
            Each store runs in a process of its own whose default executor runs one job at a time, in an \
            order the strategy picks; time moves only as the scheduler chooses (a Task.sleep is one more \
            choice). The first schedule that breaks an invariant is printed with the command that replays it. \
            Dispatch blocks run as tasks of the schedule; stores whose work is resumed from threads the \
            scheduler does not run (a Thread, a block handed over from another thread) are reported \
            UNCONTROLLED: exploring them says nothing. --strategy dfs runs every schedule of a small program \
            (e.g. --tasks 2 --rounds 1) and says when it has covered them all. Scenarios: \
            \(ExploreOptions.scenarioNames.joined(separator: ", ")).

            Exit status: 0 every explored store passed (or was UNCONTROLLED), 1 a violation was found or a \
            store hung or crashed its process, 2 bad input or a replayed schedule that does not fit.
            """)

    @OptionGroup var options: ExploreOptions

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Also write the report to this HTML file: each violation with its events, the interleaving and the replay command.",
            discussion: "One self-contained page (no script, nothing fetched), written whole or not at all."))
    var output: String?

    func validate() throws {
        if let output { _ = try OutputTarget.html(output) }
    }

    mutating func run() async throws {
        let plan = try options.plan()
        let page = try output.map(OutputTarget.html)
        var report = ExploreReport(plan: plan)
        if !options.quiet { Log.progress(report.heading) }
        for store in plan.stores {
            let outcome = try await ExploreChild.run(store: store, plan: plan, jobs: plan.jobs)
            report.add(store: store, outcome)
            if !options.quiet, plan.replay == nil {
                Log.progress("explore: \(store): \(outcome.schedules) schedule(s), \(report.verdict(outcome))")
            }
        }
        var outputs = [(OutputWriter.standardOutput, report.text())]
        if let page { outputs.append((page, report.html())) }
        try OutputWriter.write(outputs)
        if let page, !options.quiet { Log.progress("wrote html to \(Printable.name(page.path))") }
        if report.anyError { throw ExitCode(ExitStatus.usage.rawValue) }
        if report.anyViolated { throw ExitCode(ExitStatus.failed.rawValue) }
    }
}

/// The options `explore` and its child processes share.
struct ExploreOptions: ParsableArguments {
    static let scenarioNames = ScenarioCatalog.all.filter(Exploration.drives).map(\.name)

    @Option(name: .long, help: "Stores to explore, comma-separated (default: every correct store).")
    var stores: String?

    @Flag(name: .long, help: "With no --stores: the reference-broken stores too.")
    var includeBroken = false

    @Option(
        name: .long,
        help:
            """
            The scenario: expiry-storm, 401-storm, sign-out-race, user-switch, cancellation-storm, flaky-server, \
            generated, family (two accounts, a store each), session-states (the stores with a state stream), \
            step-up (the stores with API objects and step-up prompts), crash-restart (the stores that keep \
            their session: a step may crash the process), writes-under-reads (readers under a writer's \
            401s) or shared-storage (the stores that share their storage: four instances over one saved \
            session in memory). Default: expiry-storm.
            """)
    var scenario = "expiry-storm"

    @Option(
        name: .long,
        help: """
            random (a uniform walk), pct (priorities with --depth − 1 change points) or dfs (every schedule of \
            the program, depth first, until done or --schedules or --for runs out; default --for 10m) \
            (default: random).
            """)
    var strategy: String?

    @Flag(
        name: .long,
        help: """
            With --strategy dfs: run every schedule, even those that only reorder steps that commute \
            (the sleep-set reduction is on by default).
            """)
    var noReduction = false

    @Option(
        name: .long, help: "Schedules per store, 1 to 100000000 (default: 1000, or as many as fit in --for).",
        transform: ArgumentText.whole(1...100_000_000))
    var schedules: Int?

    @Option(
        name: .customLong("for"),
        help: "Keep exploring each store until this much time has passed, up to 24h, e.g. 30s, 10m.",
        transform: ArgumentText.duration(0.001...86_400, rangeText: "1ms and 24h"))
    var timeLimit: DurationArgument?

    @Option(
        name: .long, help: "Seeds the strategy, 0 to 18446744073709551615 (default: 1).", transform: ArgumentText.seed)
    var seed: UInt64?

    @Option(
        name: .long, help: "PCT's depth d: how many ordering constraints a bug needs, 1 to 10 (default: 3).",
        transform: ArgumentText.whole(1...10))
    var depth: Int?

    @Option(name: .long, help: "Concurrent callers, 1 to 64 (default: 4).", transform: ArgumentText.whole(1...64))
    var tasks = 4

    @Option(
        name: .long, help: "Rounds per schedule (expiries, 401 storms or programs), 1 to 1000 (default: 2).",
        transform: ArgumentText.whole(1...1_000))
    var rounds = 2

    @Option(
        name: .long,
        help: """
            Processes per store, 1 to 64, each running its share of the schedules (index j, j + N, …), \
            so N cores explore N times as many (default: 1). The first failing schedule is the same whatever N.
            """,
        transform: ArgumentText.whole(1...64))
    var jobs = 1

    /// Which share of the schedules a child runs (set by `explore` for its child processes).
    @Option(name: .long, help: .hidden, transform: ArgumentText.whole(0...63))
    var job = 0

    @Option(
        name: .long,
        help: """
            Play this schedule string back (one store) instead of exploring; it names its strategy and seed, \
            so --strategy, --seed, --depth, --schedules, --for and --jobs do not apply.
            """)
    var replay: [String] = []

    @Flag(name: .long, help: "No progress lines on standard error.")
    var quiet = false

    /// What to run, every option checked.
    func plan() throws(UsageError) -> ExplorePlan {
        guard ControlledExecution.isAvailable else {
            throw UsageError("explore needs Swift 6.3's executor SPI on Linux, which this build lacks")
        }
        guard replay.count <= 1 else {
            throw UsageError("--replay is given \(replay.count) times: a replay plays one schedule; give one --replay")
        }
        let replay = replay.first
        if replay != nil {
            // What a replay would ignore is refused: the schedule string names its strategy and
            // seed, and one schedule is played, in one process.
            let ignored = [
                ("--strategy", strategy != nil), ("--seed", seed != nil), ("--depth", depth != nil),
                ("--schedules", schedules != nil), ("--for", timeLimit != nil), ("--jobs", jobs > 1),
                ("--include-broken", includeBroken),
            ].filter { $0.1 }.map { $0.0 }
            if !ignored.isEmpty {
                throw UsageError(
                    "--replay plays the one schedule it is given, with the strategy and seed the string names: "
                        + "leave out \(ignored.joined(separator: ", "))")
            }
        }
        let strategyName = strategy ?? ScheduleStrategy.random.rawValue
        guard let strategy = ScheduleStrategy(rawValue: strategyName) else {
            throw UsageError("--strategy must be random, pct or dfs, not '\(Printable.name(strategyName, limit: 40))'")
        }
        guard let chosen = ScenarioCatalog.all.first(where: { $0.name == scenario }),
            Exploration.drives(chosen)
        else {
            throw UsageError(
                "explore runs \(Self.scenarioNames.joined(separator: ", ")), not '\(Printable.name(scenario, limit: 60))'"
            )
        }
        if schedules != nil, timeLimit != nil { throw UsageError("give --schedules or --for, not both") }
        if strategy == .dfs, jobs > 1 {
            throw UsageError("--strategy dfs walks one tree in one process: leave out --jobs")
        }
        if noReduction, strategy != .dfs {
            throw UsageError("--no-reduction applies to --strategy dfs only")
        }
        // A search runs until it has covered the program, within ten minutes unless told otherwise.
        let defaultSchedules = strategy == .dfs ? 100_000_000 : 1_000
        let defaultSeconds: Double? = strategy == .dfs && schedules == nil ? 600 : nil
        if job >= jobs { throw UsageError("--job must be below --jobs (\(jobs))") }
        let names = (stores ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            !$0.isEmpty
        }
        if stores != nil, names.isEmpty {
            throw UsageError("--stores needs at least one name (see 'session-bench list')")
        }
        var resolved = try StoreRegistry.resolve(names, includeBroken: includeBroken)
        // A scenario that judges a promise beyond the base contract runs the stores that make it:
        // by default those of every store, and a named store that does not is a mistake.
        if let requirement = chosen.requirement {
            if let lacking = resolved.first(where: { !requirement.isMet(by: $0) }), stores != nil {
                throw UsageError(
                    "\(lacking.name) does not declare \(requirement.declaration): \(chosen.name) explores only stores "
                        + "that do (see 'session-bench list')")
            }
            resolved = resolved.filter { requirement.isMet(by: $0) }
            guard !resolved.isEmpty else {
                throw UsageError("no store declares \(requirement.declaration): \(chosen.name) has nothing to explore")
            }
        }
        var schedule: ScheduleText?
        if let replay {
            guard let read = ScheduleText(replay) else {
                throw UsageError(
                    "--replay: '\(Printable.name(replay, limit: 60))' is not a schedule string (sbx1:<strategy>:<seed>:<choices>, as explore prints it)"
                )
            }
            guard resolved.count == 1, stores != nil else {
                throw UsageError("--replay plays one store's schedule: name it with --stores")
            }
            schedule = read
        }
        var explored = chosen
        explored.tasks = tasks
        explored.accounts = 1
        explored.rounds = rounds
        return ExplorePlan(
            stores: resolved.map(\.name), scenario: explored, strategy: strategy, seed: seed ?? 1, depth: depth ?? 3,
            schedules: timeLimit == nil && defaultSeconds == nil ? schedules ?? defaultSchedules : nil,
            seconds: timeLimit?.seconds ?? defaultSeconds, replay: schedule, jobs: jobs, job: job,
            reduces: !noReduction)
    }
}

/// What `explore` runs, as its child processes are told it.
struct ExplorePlan: Sendable {
    var stores: [String]
    var scenario: Scenario
    var strategy: ScheduleStrategy
    var seed: UInt64
    var depth: Int
    var schedules: Int?
    var seconds: Double?
    var replay: ScheduleText?
    /// Processes per store, and which of them this plan is (a child's).
    var jobs = 1
    var job = 0
    /// `dfs`: whether the search skips reorderings of steps that commute.
    var reduces = true
    /// Seconds a child may run past its schedules' share before it counts as hung (a store that
    /// blocks the scheduler's one thread): a minute for `explore`, less where the search is one
    /// part of a longer run.
    var patience = 60.0

    /// The child's arguments for `store`, job `job` of the plan's jobs.
    func arguments(for store: String, job: Int = 0) -> [String] {
        var arguments = [
            ExploreChild.command, "--stores", store, "--scenario", scenario.name, "--tasks", String(scenario.tasks),
            "--rounds", String(scenario.rounds), "--quiet",
        ]
        // A replay is the schedule alone: it names its strategy and seed.
        if let replay { return arguments + ["--replay", replay.description] }
        arguments += ["--strategy", strategy.rawValue, "--seed", String(seed), "--depth", String(depth)]
        if let schedules { arguments += ["--schedules", String(schedules)] }
        if !reduces { arguments.append("--no-reduction") }
        if jobs > 1 { arguments += ["--jobs", String(jobs), "--job", String(job)] }
        if let seconds { arguments += ["--for", "\(seconds)s"] }
        return arguments
    }

    /// The command that plays `schedule` of `store` back, named as this program was run (a user's
    /// own executable, with its stores, is not `session-bench`).
    func replayCommand(_ store: String, _ schedule: ScheduleText) -> String {
        let program = URL(fileURLWithPath: CommandLine.arguments.first ?? "session-bench").lastPathComponent
        return "\(program) explore --stores \(store) --scenario \(scenario.name) --tasks \(scenario.tasks) "
            + "--rounds \(scenario.rounds) --replay \(schedule)"
    }
}

/// What an `explore-run` reaches when the executable's `main` is async (it awaits
/// `SessionBenchCommand.main`): too late to install the controlled executor, so it says how to
/// start instead. `SessionBenchCommand.start` runs the child before this is ever parsed.
struct ExploreRunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: ExploreChild.command, abstract: "Explore one store (used internally by explore).",
        shouldDisplay: false)

    @OptionGroup var options: ExploreOptions

    func run() throws {
        throw UsageError(
            "explore needs its processes to start before any task: this executable's main.swift awaits "
                + "SessionBenchCommand.main; call SessionBenchCommand.start(extraStores:) instead, with no top-level await"
        )
    }
}
