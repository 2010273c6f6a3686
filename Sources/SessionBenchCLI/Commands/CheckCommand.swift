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

    @OptionGroup var execution: ExecutionOptions

    @Flag(name: .long, help: "Check the thresholds file and print what would run, then exit without running anything.")
    var dryRun = false

    enum CheckFormat: String, ExpressibleByArgument, CaseIterable { case table, json }

    func validate() throws {
        if update {
            let target = try OutputTarget.plan(thresholds, option: "--thresholds")
            guard case .replace = target.kind else {
                throw UsageError("--thresholds '\(Printable.name(thresholds))': --update rewrites a regular file; give the file's path")
            }
        }
    }

    mutating func run() async throws {
        let file: Thresholds
        do {
            file = try Thresholds.load(path: thresholds, knownStores: StoreRegistry.all.map(\.name))
        } catch {
            throw UsageError(error.description)
        }
        let options = try self.options(for: file.run)
        let stores = try options.resolvedStores().filter { file.run.stores.isEmpty ? !$0.isReferenceBroken : true }
        let scenarios = try options.resolvedScenarios()
        if dryRun {
            print("\(file.limits.count) limit(s)\n" + RunOptions.plan(stores, scenarios, hangTimeout: options.execution.hangTimeout, setup: options.setup), terminator: "")
            return
        }
        if !execution.quiet {
            Log.progress("session-bench check: \(stores.count) store(s) × \(scenarios.count) scenario(s), \(file.limits.count) limit(s) from \(thresholds)")
        }
        let results = await Execution(stores: stores, scenarios: scenarios, options: options, quiet: execution.quiet).run()

        if update {
            try OutputWriter.write([(try OutputTarget.plan(thresholds, option: "--thresholds"), file.updated(from: results).json())])
            if !execution.quiet { Log.progress("wrote updated limits to \(thresholds); review the diff before committing") }
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

    /// The file's `run` section as `compare`'s options, taken as values (the reader has
    /// checked each one and names the key when one is wrong).
    func options(for run: Thresholds.RunPlan) throws(UsageError) -> RunOptions {
        var options: RunOptions
        do { options = try RunOptions.parse([]) } catch { throw UsageError("\(error)") }
        if !run.stores.isEmpty { options.stores = run.stores.joined(separator: ",") }
        options.scenario = run.scenarios
        options.duration = run.duration.flatMap(DurationArgument.init)
        options.rounds = run.rounds
        options.tasks = run.tasks
        options.seed = run.seed
        options.execution = execution
        options.allocator = run.allocator
        options.allocationCounter = run.allocationCounter
        do { try options.setup.validate(inProcess: execution.inProcess) } catch { throw UsageError("\(thresholds): run: \(error.description)") }
        options.includeBroken = true  // a store named in the file runs, broken or not
        do {
            _ = try options.resolvedStores()
            _ = try options.resolvedScenarios()
        } catch {
            throw UsageError("\(thresholds): run: \(error.description)")
        }
        return options
    }
}
