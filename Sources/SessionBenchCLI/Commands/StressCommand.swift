import ArgumentParser
import Foundation
import SessionBench
import SessionContract
import SessionMeasurement

/// `session-bench stress`: randomized schedules, a new seed each iteration.
struct Stress: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: """
            Run randomized schedules (a new seed per iteration) and report violations with the seed that \
            reproduces them.
            """,
        discussion: exitStatusHelp)

    @OptionGroup var run: RunOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var expect: ExpectOptions

    @Option(
        name: .long, help: "How many randomized iterations, 1 to 1000000 (default: 10, or as many as fit in --for).",
        transform: ArgumentText.whole(InputRange.iterations))
    var iterations: Int?

    @Option(
        name: .customLong("for"),
        help: """
            Keep starting iterations until this much time has passed, up to 168h, e.g. 30s, 10m (at least one \
            iteration runs).
            """,
        transform: ArgumentText.duration(InputRange.stressSeconds, rangeText: "1ns and 168h"))
    var timeLimit: DurationArgument?

    mutating func run() async throws {
        let stores = try run.resolvedStores()
        let base = try run.resolvedScenarios()
        let expectations = try expect.load()
        var execution = Execution(run.execution, setup: run.setup)
        if run.dryRun {
            let length = timeLimit.map { "until \($0.text) have passed" } ?? "\(iterations ?? 10) iteration(s)"
            try OutputWriter.show("stress: \(length), a new seed each\n" + execution.plan(stores, base))
            return
        }
        execution.options.quiet = true  // a line per iteration, and one per failure, instead of one per run
        try run.place()
        var random = SystemRandomNumberGenerator()
        let firstSeed = run.seed ?? random.next()
        let started = ContinuousClock.now
        let deadline = timeLimit.map { started + $0.duration }
        // With --for alone, iterations go on until the time is up.
        let limit = iterations ?? (timeLimit == nil ? 10 : Int.max)
        var all: [ScenarioResult] = []
        var reruns: [String: String] = [:]
        var iteration = 0
        while iteration < limit {
            // However short --for is, one iteration runs: a stress run that ran nothing must not pass.
            if let deadline, iteration > 0, ContinuousClock.now >= deadline { break }
            let seed = firstSeed &+ UInt64(iteration)
            let scenarios = base.map { Self.vary($0, seed: seed, tasks: run.tasks, rounds: run.rounds) }
            if !run.execution.quiet {
                let of = limit == Int.max ? "" : "/\(limit)"
                Log.progress(
                    "stress: iteration \(iteration + 1)\(of), seed \(seed)"
                        + String(format: "  (%.0fs)", (ContinuousClock.now - started).secondsValue))
            }
            var results = await execution.run(stores: stores, scenarios: scenarios)
            expectations?.mark(&results)
            for result in results where !result.verdict.passes {
                guard let scenario = scenarios.first(where: { $0.name == result.scenario }),
                    let store = stores.first(where: { $0.name == result.store })
                else { continue }
                let command = reproduce(store, scenario)
                reruns[Self.key(result)] = command
                Log.progress(
                    "  \(result.store) × \(result.scenario): \(result.verdict.rawValue) — reproduce with: \(command)")
            }
            all += results
            iteration += 1
        }
        // Stale over the whole run: an expectation is stale only if no iteration showed it.
        let stale = expectations?.stale(in: all) ?? []
        let failures = all.count { !$0.verdict.passes }
        let known = all.count { $0.known != nil }
        do {
            let seeds =
                switch iteration {
                case 0: "none"
                case 1: "\(firstSeed)"
                default: "\(firstSeed)…\(firstSeed &+ UInt64(iteration - 1))"
                }
            Log.progress(
                "stress: \(iteration) iteration(s), seeds \(seeds), \(all.count) run(s), \(failures) not passed"
                    + (expectations == nil
                        ? ""
                        : " (new violations, hangs or crashes), \(known) with known violations, \(stale.count) stale expectation(s)")
                    + String(format: ", %.0fs", (ContinuousClock.now - started).secondsValue))
        }
        var report = ResultsReport(results: all, metadata: .current(command: "stress"))
        if let expectations { report.expectations = .init(file: expectations.path, stale: stale) }
        try output.emit(report, quiet: run.execution.quiet, rerun: { reruns[Self.key($0)] })
        if failures > 0 || !stale.isEmpty { throw ExitCode(ExitStatus.failed.rawValue) }
    }

    /// A scenario varied by `seed` beyond its faults: the crowd and the number of rounds, each
    /// unless the command line fixed it (`--tasks`, `--rounds`).
    static func vary(_ scenario: Scenario, seed: UInt64, tasks fixedTasks: Int? = nil, rounds fixedRounds: Int? = nil)
        -> Scenario
    {
        var rng = SeededRandomSource(seed: seed)
        // Between half and one and a half times the crowd, inside the range a scenario accepts.
        let crowd = scenario.tasks / 2 + Int(rng.next() % UInt64(scenario.tasks))
        let tasks = fixedTasks ?? min(InputRange.tasks.upperBound, max(2, crowd))
        let rounds = scenario.isRoundBased ? fixedRounds ?? max(5, scenario.rounds / 4) : nil
        return ScenarioOverrides(tasks: tasks, rounds: rounds, seed: seed).applied(to: scenario)
    }

    /// A run among every iteration's: its store, scenario and seed.
    static func key(_ result: ScenarioResult) -> String { "\(result.store)\u{0}\(result.scenario)\u{0}\(result.seed)" }

    /// The `compare` command that runs exactly this store × scenario again (``RunOptions/reproduce``).
    func reproduce(_ store: StoreDescriptor, _ scenario: Scenario) -> String {
        run.reproduce(store, scenario, expect: expect.path)
    }

    /// `value` as the command line reads it back, exactly: `500`, `0.75`.
    static func argument(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : "\(value)"
    }
}

/// A word of a command line as a shell reads it back: as it is when it holds only characters a
/// shell leaves alone, in single quotes otherwise; control characters shown escaped, so that the
/// command stays one line.
enum ShellWord {
    static func quoted(_ word: String) -> String {
        let plain =
            !word.isEmpty
            && word.unicodeScalars.allSatisfy { scalar in
                scalar.isASCII
                    && (CharacterSet.alphanumerics.contains(scalar) || "@%_+=:,./-".unicodeScalars.contains(scalar))
            }
        let quoted = plain ? word : "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
        return Printable.name(quoted, limit: 4_096)
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
