import ArgumentParser
import Foundation
import SessionBench
import SessionContract

/// `session-bench compare`: the main job.
struct Compare: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run stores through scenarios; report each one's verdict and cost (the main job).",
        discussion: exitStatusHelp)

    @OptionGroup var run: RunOptions
    @OptionGroup var output: OutputOptions

    mutating func run() async throws {
        let stores = try run.resolvedStores()
        let scenarios = try run.resolvedScenarios()
        let execution = Execution(run.execution, setup: run.setup)
        if run.dryRun {
            print(execution.plan(stores, scenarios), terminator: "")
            return
        }
        try run.place()
        if !run.execution.quiet {
            let seeds = Set(scenarios.map(\.seed)).sorted().map(String.init).joined(separator: ",")
            Log.progress(
                "session-bench compare: \(stores.count) store(s) × \(scenarios.count) scenario(s), seed \(seeds)"
                    + (run.execution.inProcess ? ", in process" : ", one process per store"))
        }
        let results = await execution.run(stores: stores, scenarios: scenarios)
        let report = ResultsReport(results: results, metadata: .current(command: "compare"))
        try output.emit(report, quiet: run.execution.quiet)
        if results.contains(where: { $0.verdict != .pass }) { throw ExitCode(ExitStatus.failed.rawValue) }
    }
}
