import ArgumentParser
import Foundation
import SessionBench
import SessionContract
import SessionOracle

/// `session-bench check`: the CI gate.
struct Check: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the scenarios a thresholds file names and fail on invariant violations or limits exceeded.",
        discussion: """
            Counts (refresh calls, allocations) are gated absolutely; timings only as ratios measured \
            in the same run. Invariant violations always fail. docs/gate.md documents the file's schema.

            Exit status: 0 when every check passed; 1 when a check or an invariant failed; 2 for bad \
            usage or an unreadable or invalid thresholds file (the message names the file and the key).
            """)

    @Option(name: .long, help: "The thresholds file (JSON).")
    var thresholds: String

    @Flag(
        name: .long,
        help: "Rewrite the thresholds file from this run, with headroom, for review; always exits 0 if it could run.")
    var update = false

    @Option(name: .long, help: "Output format: table or json.")
    var format: CheckFormat = .table

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Also write the checks and the run's results to this HTML file (charts, violations, replay commands).",
            discussion: "One self-contained page, written whole or not at all; the table still goes to standard output."
        ))
    var output: String?

    @OptionGroup var execution: ExecutionOptions

    @Flag(name: .long, help: "Check the thresholds file and print what would run, then exit without running anything.")
    var dryRun = false

    enum CheckFormat: String, ExpressibleByArgument, CaseIterable { case table, json }

    func validate() throws {
        if let output {
            _ = try OutputTarget.html(output)
            guard !update else { throw UsageError("--update rewrites the thresholds file: leave out --output") }
            try OutputOverlap.check(
                outputs: [("--output", try OutputTarget.plan(output))], inputs: [("--thresholds", thresholds)])
        }
        if update {
            let target = try OutputTarget.plan(thresholds, option: "--thresholds")
            guard case .replace = target.kind else {
                throw UsageError(
                    "--thresholds '\(Printable.name(thresholds))': "
                        + "--update rewrites a regular file; give the file's path")
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
        let (stores, scenarios, setup) = try selection(for: file.run)
        let execution = Execution(self.execution, setup: setup)
        if dryRun {
            try OutputWriter.show("\(file.limits.count) limit(s)\n" + execution.plan(stores, scenarios))
            return
        }
        if !execution.quiet {
            Log.progress(
                "session-bench check: \(stores.count) store(s) × \(scenarios.count) scenario(s), "
                    + "\(file.limits.count) limit(s) from \(thresholds)")
        }
        let results = await execution.run(stores: stores, scenarios: scenarios)

        if update {
            try OutputWriter.write([
                (try OutputTarget.plan(thresholds, option: "--thresholds"), file.updated(from: results).json())
            ])
            if !execution.quiet {
                Log.progress("wrote updated limits to \(thresholds); review the diff before committing")
            }
            return
        }
        let outcomes = ThresholdCheck(thresholds: file, results: results).evaluate()
        let text: String
        switch format {
        case .table: text = ThresholdCheck.table(outcomes)
        case .json:
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            text = String(decoding: try encoder.encode(outcomes), as: UTF8.self) + "\n"
        }
        // Standard output is the check's output: a write that fails is exit 2, never a silent pass.
        var outputs = [(OutputWriter.standardOutput, text)]
        let page = try output.map(OutputTarget.html)
        if let page { outputs.append((page, ThresholdCheck.html(outcomes, results: results, file: thresholds))) }
        try OutputWriter.write(outputs)
        if let page, !execution.quiet { Log.progress("wrote html to \(Printable.name(page.path))") }
        if outcomes.contains(where: { !$0.passed }) { throw ExitCode(ExitStatus.failed.rawValue) }
    }

    /// The stores, scenarios and measuring setup the file's `run` section names, taken as
    /// values (the reader has checked each one and names the key when one is wrong). A store
    /// the file names runs, broken or not; with none named, every correct store runs.
    func selection(
        for run: Thresholds.RunPlan
    ) throws(UsageError) -> (stores: [StoreDescriptor], scenarios: [Scenario], setup: MeasuringSetup) {
        let setup = MeasuringSetup.chosen(allocator: run.allocator, counter: run.allocationCounter)
        let duration = run.duration.flatMap(DurationText.seconds).map(DurationText.duration(seconds:))
        let overrides = ScenarioOverrides(tasks: run.tasks, duration: duration, rounds: run.rounds, seed: run.seed)
        do {
            try setup.validate(inProcess: execution.inProcess)
            let stores = try StoreRegistry.resolve(run.stores, includeBroken: false)
            var scenarios = try ScenarioCatalog.selection(run.scenarios, overrides: overrides)
            for (name, rounds) in run.scenarioRounds {
                let named = Set(((try? ScenarioCatalog.resolved(name)) ?? []).map(\.name))
                for index in scenarios.indices where named.contains(scenarios[index].name) {
                    scenarios[index].rounds = rounds
                }
            }
            return (stores, scenarios, setup)
        } catch {
            throw UsageError("\(thresholds): run: \(error.description)")
        }
    }
}
