import ArgumentParser
import Foundation
import SessionBench

/// `session-bench check`: the CI gate.
struct Check: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the scenarios a thresholds file names and fail on invariant violations or limits exceeded.",
        discussion: """
            Counts (refresh calls, allocations) are gated absolutely; timings only as ratios measured \
            in the same run. Invariant violations always fail. The README documents the file's schema.

            Exit status: 0 when every check passed; 1 when a check or an invariant failed; 2 for bad \
            usage or an unreadable or invalid thresholds file (the message names the file and the key).
            """)

    @Option(name: .long, help: "The thresholds file (JSON).")
    var thresholds: String

    @Flag(name: .long, help: "Rewrite the thresholds file from this run, with headroom, for review; always exits 0 if it could run.")
    var update = false

    @Option(name: .long, help: "Output format: table or json.")
    var format: CheckFormat = .table

    @Option(name: .long, help: "Seconds a call may take before the store counts as hung (default: 5).")
    var hangTimeout: Double = 5

    @Flag(name: .long, help: "Run every store in this process (no crash isolation; allocations need LD_PRELOAD).")
    var inProcess = false

    @Flag(name: .long, help: "No progress lines on standard error.")
    var quiet = false

    enum CheckFormat: String, ExpressibleByArgument, CaseIterable { case table, json }

    func validate() throws {
        guard hangTimeout > 0, hangTimeout.isFinite else { throw ValidationError("--hang-timeout must be a positive number of seconds") }
        if update { try AtomicFile.checkWritable(thresholds) }
    }

    mutating func run() async throws {
        let file: Thresholds
        do {
            file = try Thresholds.load(path: thresholds, knownStores: StoreRegistry.all.map(\.name))
        } catch {
            throw UsageError(error.description)
        }
        var options = try RunOptions.parse(runArguments(file.run))
        options.hangTimeout = hangTimeout
        options.inProcess = inProcess
        options.includeBroken = true  // a store named in the file runs, broken or not
        do { try options.validate() } catch { throw UsageError("\(thresholds): run: \(RunOptions.message(for: error))") }
        let stores = try options.resolvedStores().filter { file.run.stores.isEmpty ? !$0.isReferenceBroken : true }
        let scenarios = try options.resolvedScenarios()
        if !quiet {
            Log.progress("session-bench check: \(stores.count) store(s) × \(scenarios.count) scenario(s), \(file.limits.count) limit(s) from \(thresholds)")
        }
        let results = await Execution(stores: stores, scenarios: scenarios, options: options, quiet: quiet).run()

        if update {
            try AtomicFile.write(file.updated(from: results).json(), to: thresholds)
            if !quiet { Log.progress("wrote updated limits to \(thresholds); review the diff before committing") }
            return
        }
        let outcomes = ThresholdCheck(thresholds: file, results: results).evaluate()
        switch format {
        case .table: print(ThresholdCheck.table(outcomes), terminator: "")
        case .json:
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(outcomes), as: UTF8.self))
        }
        if outcomes.contains(where: { !$0.passed }) { throw ExitCode(ExitStatus.failed.rawValue) }
    }

    /// The file's `run` section as the options `compare` would take.
    func runArguments(_ run: Thresholds.RunPlan) -> [String] {
        var arguments: [String] = []
        if !run.stores.isEmpty { arguments += ["--stores", run.stores.joined(separator: ",")] }
        if !run.scenarios.isEmpty { arguments += ["--scenario", run.scenarios.joined(separator: ",")] }
        if let duration = run.duration { arguments += ["--duration", duration] }
        if let rounds = run.rounds { arguments += ["--rounds", String(rounds)] }
        if let tasks = run.tasks { arguments += ["--tasks", String(tasks)] }
        if let seed = run.seed { arguments += ["--seed", String(seed)] }
        return arguments
    }
}
