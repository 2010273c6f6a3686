import ArgumentParser
import Foundation
import SessionBench
import SessionContract
import SessionMeasurement

/// `session-bench compare`: the main job.
struct Compare: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run stores through scenarios; report each one's verdict and cost (the main job).",
        discussion: """
            With --baseline, every figure is compared with a saved run's: a two-sided Mann–Whitney U test over \
            the repeats, and a change larger than the noise threshold.

            Exit status: 0 when every store passed (and nothing regressed); 1 when an invariant failed (one \
            --expect does not name), a store hung or crashed, or an expectation went stale; 2 for bad usage or input, or a baseline that cannot be compared; 3 when \
            every store passed but a figure regressed significantly against --baseline.
            """)

    @OptionGroup var run: RunOptions
    @OptionGroup var baselines: BaselineOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var expect: ExpectOptions

    @Flag(
        name: .customLong("no-explore"),
        help: "Leave out the systematic search: judge by the paced runs alone (faster, and finds less).")
    var noExplore = false

    @Option(
        name: .long,
        help: """
            Seeded schedules per store × scenario that explore drives, run on the controlled scheduler after \
            the paced runs; a failing one joins the verdict, 1 to 1000000 (default: \(Self.defaultExploreSchedules)).
            """,
        transform: ArgumentText.whole(1...1_000_000))
    var exploreSchedules: Int?

    static let defaultExploreSchedules = 1_000

    /// The search that joins the verdict, unless turned off or this build has no controlled scheduler.
    var exploration: CompareExploration? {
        guard !noExplore, ControlledExecution.isAvailable else { return nil }
        return CompareExploration(schedules: exploreSchedules ?? Self.defaultExploreSchedules)
    }

    func validate() throws {
        if noExplore, exploreSchedules != nil {
            throw UsageError("--no-explore leaves the search out: leave out --explore-schedules too")
        }
        var outputs = try output.namedTargets()
        if let name = baselines.saveBaseline {
            outputs.append(("--save-baseline", OutputTarget(path: try Baselines.path(for: name), kind: .direct)))
        }
        let read = try baselines.baseline.map { reference throws(UsageError) in
            ("--baseline", try Baselines.path(for: reference))
        }
        try OutputOverlap.check(outputs: outputs, inputs: read.map { [$0] } ?? [])
    }

    mutating func run() async throws {
        let stores = try run.resolvedStores()
        let scenarios = try run.resolvedScenarios()
        let execution = Execution(run.execution, setup: run.setup)
        let repeats = baselines.passes
        let baseline = try baselines.baseline.map { reference throws(UsageError) in try Baselines.load(reference) }
        let expectations = try expect.load()
        var metadata = RunMetadata.current(command: "compare")
        metadata.execution = run.execution.inProcess ? "in-process" : "isolated"
        metadata.transport = run.execution.transport.rawValue
        metadata.repeats = repeats > 1 ? repeats : nil
        if let baseline {
            // Refused before anything runs, where the plan already shows the difference.
            let planned = Self.planned(stores: stores, scenarios: scenarios, setup: run.setup, cpus: run.cpus)
            try Self.refuseIfIncomparable(baseline, ResultsReport(results: planned, metadata: metadata))
        }
        let exploration = self.exploration
        let explored = scenarios.contains { CompareExploration.explored($0) != nil }
        if run.dryRun {
            var plan = execution.plan(stores, scenarios, repeats: repeats)
            if let exploration, explored {
                plan += "  " + exploration.summary(seeds: Set(scenarios.map(\.seed)).sorted()) + "\n"
            }
            try OutputWriter.show(plan)
            return
        }
        try run.place()
        if !run.execution.quiet {
            let seeds = Set(scenarios.map(\.seed)).sorted().map(String.init).joined(separator: ",")
            Log.progress(
                "session-bench compare: \(stores.count) store(s) × \(scenarios.count) scenario(s), seed \(seeds)"
                    + (repeats > 1 ? ", \(repeats) repeats" : "")
                    + (run.execution.inProcess ? ", in process" : ", one process per store"))
        }
        var results = await execution.run(stores: stores, scenarios: scenarios, repeats: repeats)
        if let exploration, explored {
            let notes = await exploration.run(&results, quiet: run.execution.quiet)
            metadata.exploration = [exploration.summary(seeds: Set(scenarios.map(\.seed)).sorted())] + notes
        }
        let stale = expectations?.apply(to: &results) ?? []
        var report = ResultsReport(results: results, metadata: metadata)
        if let expectations { report.expectations = .init(file: expectations.path, stale: stale) }
        var refusal: UsageError?
        if let baseline {
            do {
                let notes = try Self.refuseIfIncomparable(baseline, report)
                var comparison = BaselineComparison(
                    baseline: baseline.report, current: report, name: baseline.shownAs,
                    alpha: baselines.alpha ?? BaselineOptions.defaultAlpha,
                    noiseThreshold: baselines.noiseThreshold ?? BaselineOptions.defaultNoiseThreshold)
                comparison.notes += notes
                report.comparison = comparison
            } catch {
                refusal = error
            }
        }
        var baselineOutput: [(target: OutputTarget, text: String)] = []
        var madeFolders: [String] = []
        if let name = baselines.saveBaseline {
            var saved = report
            saved.comparison = nil
            let text = try saved.json()
            let (target, made) = try Baselines.saveTarget(name)
            baselineOutput.append((target, text))
            madeFolders = made
        }
        // The saved baseline is one more output: written with the others, or none is — and then
        // no folder made for it stays either.
        do {
            let (run, expect) = (self.run, self.expect)
            try output.emit(
                report, quiet: run.execution.quiet, also: baselineOutput,
                rerun: { result in
                    guard let store = stores.first(where: { $0.name == result.store }),
                        let scenario = Execution.scenarios(scenarios, for: store).first(where: {
                            $0.name == result.scenario
                        })
                    else { return nil }
                    return run.reproduce(store, scenario, expect: expect.path)
                })
        } catch {
            Baselines.removeFolders(madeFolders)
            throw error
        }
        if let name = baselines.saveBaseline {
            if !run.execution.quiet {
                Log.progress(
                    "saved baseline \(Baselines.isName(name) ? "'\(name)' to \(try Baselines.path(for: name))" : "to \(Printable.name(name))")"
                )
            }
        }
        // Found only after the run (what the measuring processes actually ran on): the results
        // stand and are written; a failed invariant still decides the exit status.
        let failed = results.contains { !$0.verdict.passes } || !stale.isEmpty
        if let refusal {
            guard failed else { throw refusal }
            Log.progress("session-bench: not compared: \(refusal.description)")
        }
        if failed { throw ExitCode(ExitStatus.failed.rawValue) }
        if let comparison = report.comparison, !comparison.regressions.isEmpty {
            throw ExitCode(ExitStatus.regression.rawValue)
        }
    }

    /// A one-line error naming every difference that makes `current` incomparable with
    /// `baseline`; else what differs without mattering (the notes).
    @discardableResult
    static func refuseIfIncomparable(
        _ baseline: (report: ResultsReport, shownAs: String), _ current: ResultsReport
    ) throws(UsageError) -> [String] {
        let (refusals, notes) = BaselineConditions.check(baseline: baseline.report, current: current)
        guard !refusals.isEmpty else { return notes }
        throw UsageError(
            "cannot compare with baseline \(baseline.shownAs): " + refusals.joined(separator: "; ")
                + "; run with the baseline's settings on its kind of machine, or save a new baseline")
    }

    /// What the run will be, as results not yet run: each store × scenario with its setup, the
    /// allocator and counter asked for, and the CPUs it will run on (`--cpus`, else all allowed).
    static func planned(
        stores: [StoreDescriptor], scenarios: [Scenario], setup: MeasuringSetup, cpus pinned: [Int]?
    ) -> [ScenarioResult] {
        let cpus = pinned ?? CPUPlacement.allowed
        return stores.flatMap { store in
            Execution.scenarios(scenarios, for: store).map { scenario in
                var result = ScenarioResult(store: store.name, scenario: scenario, verdict: .notRun)
                result.allocator = setup.allocator
                result.allocationCounter = setup.counter
                result.cpus = cpus.isEmpty ? nil : CPUPlacement.text(cpus)
                return result
            }
        }
    }
}
