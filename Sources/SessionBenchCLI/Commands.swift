import ArgumentParser
import Foundation
import SessionBench
import SessionContract

/// `session-bench`: which way of guarding a session's tokens is correct, and what it costs.
public struct SessionBenchCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "session-bench",
        abstract: "Check session-token stores for concurrency bugs and measure what each costs.",
        discussion: exitStatusHelp,
        subcommands: [Compare.self, List.self, Sweep.self, Stress.self, Check.self, RunStore.self],
        defaultSubcommand: Compare.self
    )

    public init() {}

    /// Runs the command line with the built-in stores plus `extraStores` (for a user's own
    /// package), and exits with the documented status.
    public static func main(extraStores: [StoreDescriptor]) async -> Never {
        StoreRegistry.register(extraStores)
        await main(arguments: Array(CommandLine.arguments.dropFirst()))
    }

    public static func main(arguments: [String]) async -> Never {
        if SelfTestStores.enabled { StoreRegistry.register(SelfTestStores.all) }
        ProcessGuard.install()
        do {
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            Foundation.exit(ExitStatus.success.rawValue)
        } catch {
            Foundation.exit(report(error))
        }
    }

    /// Prints `error` the way the tool promises (one line for bad input) and picks the status.
    static func report(_ error: Error) -> Int32 {
        let (status, text) = outcome(of: error)
        switch text {
        case .standardOutput(let help): print(help)
        case .standardError(let line): Log.progress(line)
        case nil: break
        }
        return status
    }

    enum Text: Equatable {
        case standardOutput(String)
        case standardError(String)
    }

    /// The status an error ends the process with, and what is printed where.
    static func outcome(of error: Error) -> (status: Int32, text: Text?) {
        if let usage = error as? UsageError {
            return (ExitStatus.usage.rawValue, .standardError("session-bench: error: \(Printable.name(usage.description, limit: 600))"))
        }
        let code = exitCode(for: error)
        if code == .success {
            return (ExitStatus.success.rawValue, .standardOutput(fullMessage(for: error)))  // --help, --version
        }
        if let exit = error as? ExitCode { return (exit.rawValue, nil) }
        // One line, and what the user typed shown safely (a NUL or an escape sequence as \u{..}).
        let firstLine = message(for: error).split(separator: "\n").first.map(String.init) ?? "\(error)"
        let message = Printable.name(firstLine, limit: 600)
        let hint = message.contains("(see '") ? "" : " (see 'session-bench --help')"
        return (ExitStatus.usage.rawValue, .standardError("session-bench: error: \(message)\(hint)"))
    }
}

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the stores and scenarios, one per line.")

    func run() {
        let width = max(16, (StoreRegistry.all.map(\.name.count).max() ?? 0) + 1)
        print("stores:")
        for store in StoreRegistry.all {
            let marks = [store.isReferenceBroken ? "reference-broken" : nil, store.offersSynchronousRead ? "sync read" : nil]
                .compactMap { $0 }
            let suffix = marks.isEmpty ? "" : "  [\(marks.joined(separator: ", "))]"
            print("  \(store.name.padding(toLength: width, withPad: " ", startingAt: 0)) \(store.summary)\(suffix)")
        }
        print("scenarios:")
        for scenario in ScenarioCatalog.all {
            print("  \(scenario.name.padding(toLength: 20, withPad: " ", startingAt: 0)) \(ScenarioText.summary(scenario))")
        }
    }
}

struct Compare: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run stores through scenarios; report each one's verdict and cost (the main job).",
        discussion: exitStatusHelp)

    @OptionGroup var run: RunOptions
    @OptionGroup var output: OutputOptions

    mutating func run() async throws {
        let stores = try run.resolvedStores()
        let scenarios = try run.resolvedScenarios()
        if run.dryRun {
            print(RunOptions.plan(stores, scenarios, hangTimeout: run.hangTimeout, setup: run.setup), terminator: "")
            return
        }
        try run.place()
        if !output.quiet {
            let seeds = Set(scenarios.map(\.seed)).sorted().map(String.init).joined(separator: ",")
            Log.progress(
                "session-bench compare: \(stores.count) store(s) × \(scenarios.count) scenario(s), seed \(seeds)"
                    + (run.inProcess ? ", in process" : ", one process per store"))
        }
        let results = await Execution(stores: stores, scenarios: scenarios, options: run, quiet: output.quiet).run()
        let report = ResultsReport(results: results, metadata: .current(command: "compare"))
        try output.emit(report)
        if results.contains(where: { $0.verdict != .pass }) { throw ExitCode(ExitStatus.failed.rawValue) }
    }
}

struct Stress: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run randomized schedules (a new seed per round) and report violations with the seed that reproduces them.",
        discussion: exitStatusHelp)

    @OptionGroup var run: RunOptions
    @OptionGroup var output: OutputOptions

    @Option(
        name: .long, help: "How many randomized iterations, 1 to 1000000 (default: 10, or as many as fit in --for).",
        transform: ArgumentText.whole(InputRange.iterations))
    var iterations: Int?

    @Option(
        name: .customLong("for"),
        help: "Keep starting iterations until this much time has passed, up to 168h, e.g. 30s, 10m (at least one iteration runs).",
        transform: ArgumentText.duration(InputRange.stressSeconds, rangeText: "1ns and 168h"))
    var timeLimit: DurationArgument?

    mutating func run() async throws {
        let stores = try run.resolvedStores()
        let base = try run.resolvedScenarios()
        if run.dryRun {
            let length = timeLimit.map { "until \($0.text) have passed" } ?? "\(iterations ?? 10) iteration(s)"
            print("stress: \(length), a new seed each\n" + RunOptions.plan(stores, base, hangTimeout: run.hangTimeout, setup: run.setup), terminator: "")
            return
        }
        try run.place()
        var random = SystemRandomNumberGenerator()
        let firstSeed = run.seed ?? random.next()
        let started = ContinuousClock.now
        let deadline = timeLimit.map { started + $0.duration }
        // With --for alone, iterations go on until the time is up.
        let limit = iterations ?? (timeLimit == nil ? 10 : Int.max)
        var all: [ScenarioResult] = []
        var iteration = 0
        while iteration < limit {
            // However short --for is, one iteration runs: a stress run that ran nothing must not pass.
            if let deadline, iteration > 0, ContinuousClock.now >= deadline { break }
            let seed = firstSeed &+ UInt64(iteration)
            let scenarios = base.map { Self.vary($0, seed: seed) }
            if !output.quiet {
                let of = limit == Int.max ? "" : "/\(limit)"
                Log.progress("stress: iteration \(iteration + 1)\(of), seed \(seed)" + String(format: "  (%.0fs)", (ContinuousClock.now - started).secondsValue))
            }
            let results = await Execution(stores: stores, scenarios: scenarios, options: run, quiet: true).run()
            for result in results where result.verdict != .pass {
                guard let scenario = scenarios.first(where: { $0.name == result.scenario }),
                    let store = stores.first(where: { $0.name == result.store })
                else { continue }
                Log.progress("  \(result.store) × \(result.scenario): \(result.verdict.rawValue) — reproduce with: \(reproduce(store, scenario))")
            }
            all += results
            iteration += 1
        }
        let failures = all.count { $0.verdict != .pass }
        do {
            let seeds = iteration == 0 ? "none" : iteration == 1 ? "\(firstSeed)" : "\(firstSeed)…\(firstSeed &+ UInt64(iteration - 1))"
            Log.progress(
                "stress: \(iteration) iteration(s), seeds \(seeds), \(all.count) run(s), \(failures) not passed"
                    + String(format: ", %.0fs", (ContinuousClock.now - started).secondsValue))
        }
        let report = ResultsReport(results: all, metadata: .current(command: "stress"))
        try output.emit(report)
        if failures > 0 { throw ExitCode(ExitStatus.failed.rawValue) }
    }

    /// A scenario varied by `seed` beyond its faults: the crowd and the number of rounds.
    static func vary(_ scenario: Scenario, seed: UInt64) -> Scenario {
        var scenario = scenario
        scenario.seed = seed
        var rng = SeededRandomSource(seed: seed)
        // Between half and one and a half times the crowd, inside the range a scenario accepts.
        scenario.tasks = min(InputRange.tasks.upperBound, max(2, scenario.tasks / 2 + Int(rng.next() % UInt64(scenario.tasks))))
        scenario.accounts = min(scenario.accounts, scenario.tasks)
        if scenario.isRoundBased { scenario.rounds = max(5, scenario.rounds / 4) }
        return scenario
    }

    /// The `compare` command that runs exactly this store × scenario again.
    func reproduce(_ store: StoreDescriptor, _ scenario: Scenario) -> String {
        let program = URL(fileURLWithPath: CommandLine.arguments.first ?? "session-bench").lastPathComponent
        var words = [program, "compare", "--stores", store.name, "--scenario", scenario.name, "--seed", "\(scenario.seed)",
            "--tasks", "\(scenario.tasks)"]
        if scenario.isRoundBased { words += ["--rounds", "\(scenario.rounds)"] }
        if let duration = run.duration, !scenario.isRoundBased { words += ["--duration", duration.text] }
        if let rate = run.rate, !scenario.isRoundBased { words += ["--rate", InputRange.text(rate)] }
        if let timeout = run.hangTimeoutOption { words += ["--hang-timeout", InputRange.text(timeout)] }
        if store.isReferenceBroken { words.append("--include-broken") }
        if let cpus = run.cpus { words += ["--cpus", CPUPlacement.text(cpus)] }
        if run.inProcess { words.append("--in-process") }
        return words.joined(separator: " ")
    }
}

/// A tiny seeded generator for the stress command's own choices.
struct SeededRandomSource {
    var state: UInt64
    init(seed: UInt64) { state = seed ^ 0x9E37_79B9_7F4A_7C15 }
    mutating func next() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return state >> 11
    }
}

/// The measuring child of an isolated run. Not for people: reads a plan on standard input.
struct RunStore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run-store", abstract: "Measure one store (used internally by compare and stress).",
        shouldDisplay: false)

    mutating func run() async throws {
        Lifeline.watch()
        let input = FileHandle.standardInput.readDataToEndOfFile()
        let plan: IsolatedRun.Plan
        do { plan = try JSONDecoder().decode(IsolatedRun.Plan.self, from: input) } catch {
            throw UsageError("run-store expects a plan as JSON on standard input: \(error)")
        }
        guard let store = StoreRegistry.named(plan.store) else { throw UsageError("unknown store '\(Printable.name(plan.store))'") }
        guard InputRange.hangTimeoutSeconds.contains(plan.hangTimeoutSeconds) else {
            throw UsageError("run-store: hangTimeoutSeconds must be \(InputRange.text(InputRange.hangTimeoutSeconds))")
        }
        for scenario in plan.scenarios {
            do { try scenario.validate() } catch { throw UsageError("run-store: \(error)") }
        }
        var runner = ScenarioRunner(hangTimeout: DurationText.duration(seconds: plan.hangTimeoutSeconds))
        for (index, scenario) in plan.scenarios.enumerated() {
            let rest = Array(plan.scenarios.dropFirst(index + 1))
            // A store that blocks every pool thread stops this process from running tasks: the
            // watchdog's thread writes the verdict, and the rest as not run, and ends it.
            runner.onStarvation = { hung in
                Self.emit(hung)
                Self.emitNotRun(rest, store: store.name, after: scenario.name)
                Foundation.exit(0)
            }
            FileHandle.standardOutput.write(Data((IsolatedRun.startPrefix + scenario.name + "\n").utf8))
            let result = await runner.run(store, scenario)
            Self.emit(result)
            if result.verdict == .hung {
                // Callers are still stuck inside the store; nothing after this would be trustworthy.
                Self.emitNotRun(rest, store: store.name, after: scenario.name)
                Foundation.exit(0)
            }
        }
    }

    static func emit(_ result: ScenarioResult) {
        guard let json = try? JSONEncoder().encode(result) else { return }
        FileHandle.standardOutput.write(Data((IsolatedRun.resultPrefix + String(decoding: json, as: UTF8.self) + "\n").utf8))
    }

    static func emitNotRun(_ scenarios: [Scenario], store: String, after hung: String) {
        for rest in scenarios {
            var skipped = ScenarioResult(store: store, scenario: rest, verdict: .notRun)
            skipped.failure = "not run: the store hung in \(hung)"
            emit(skipped)
        }
    }
}
