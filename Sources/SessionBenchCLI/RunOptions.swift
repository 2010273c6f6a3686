import ArgumentParser
import Foundation
import SessionBench
import SessionContract

/// Which stores and scenarios to run, and how: shared by `compare` and `stress`.
struct RunOptions: ParsableArguments {
    @Option(name: .long, help: "Comma-separated store names (default: every correct store; see 'list').")
    var stores: String?

    @Option(name: .long, help: "Scenario name; repeat or separate with commas (default: every preset).")
    var scenario: [String] = []

    @Option(name: .long, help: "Concurrent callers per scenario (default: each preset's own).")
    var tasks: Int?

    @Option(name: .long, help: "How long steady scenarios run, e.g. 500ms, 2s (default: the preset's).")
    var duration: DurationArgument?

    @Option(name: .long, help: "Rounds per round-based scenario (default: the preset's).")
    var rounds: Int?

    @Option(name: .long, help: "Seed for faults, latencies and cancellations (default: 1). The same seed reproduces a run.")
    var seed: UInt64?

    @Option(name: .long, help: "Open loop for steady scenarios: total calls per second (default: closed loop).")
    var rate: Double?

    @Flag(name: .long, help: "Include stores that are broken on purpose (they are expected to fail).")
    var includeBroken = false

    @Option(name: .long, help: "Seconds a call may take before the store counts as hung (default: 5).")
    var hangTimeout: Double = 5

    @Flag(name: .long, help: "Run every store in this process (no crash isolation; allocations need LD_PRELOAD).")
    var inProcess = false

    func validate() throws {
        if let tasks, tasks < 1 { throw ValidationError("--tasks must be at least 1 (got \(tasks))") }
        if let rounds, rounds < 1 { throw ValidationError("--rounds must be at least 1 (got \(rounds))") }
        if let rate, !(rate > 0 && rate.isFinite) { throw ValidationError("--rate must be a positive number of calls per second") }
        guard hangTimeout > 0, hangTimeout.isFinite else { throw ValidationError("--hang-timeout must be a positive number of seconds") }
        _ = try resolvedStores()
        _ = try resolvedScenarios()
    }

    func resolvedStores() throws(UsageError) -> [StoreDescriptor] {
        let names = (stores ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        if stores != nil, names.isEmpty { throw UsageError("--stores needs at least one name (see 'session-bench list')") }
        return try StoreRegistry.resolve(names, includeBroken: includeBroken)
    }

    func resolvedScenarios() throws(UsageError) -> [Scenario] {
        let names = scenario.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        var scenarios: [Scenario] = []
        do {
            scenarios = names.isEmpty ? ScenarioCatalog.defaults : try names.map { name throws(ScenarioError) in try ScenarioCatalog.named(name) }
        } catch {
            throw UsageError("\(error) (see 'session-bench list')")
        }
        for index in scenarios.indices {
            if let tasks { scenarios[index].tasks = tasks; scenarios[index].accounts = min(scenarios[index].accounts, tasks) }
            if let duration { scenarios[index].duration = duration.duration }
            if let rounds { scenarios[index].rounds = rounds }
            if let seed { scenarios[index].seed = seed }
            if let rate, scenarios[index].kind == .steadyReads { scenarios[index].arrivalRate = rate }
            do { try scenarios[index].validate() } catch { throw UsageError(error.description) }
        }
        return scenarios
    }

    /// The in-process runner. A store that blocks every thread of the cooperative pool
    /// leaves nothing to run the rest: the verdict is printed and the process exits.
    var runner: ScenarioRunner {
        var runner = ScenarioRunner(hangTimeout: .milliseconds(Int64(hangTimeout * 1000)))
        runner.onStarvation = { hung in
            let report = ResultsReport(results: [hung], metadata: .current(command: "compare --in-process"))
            print(report.table(), terminator: "")
            Log.progress("session-bench: the store blocked every thread of the cooperative pool; stopping (run without --in-process to go on with the other stores)")
            Foundation.exit(ExitStatus.failed.rawValue)
        }
        return runner
    }

    var effectiveSeed: UInt64 { seed ?? ScenarioCatalog.all[0].seed }
}
