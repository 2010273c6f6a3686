import ArgumentParser
import Foundation
import SessionBench
import SessionContract
import SessionMeasurement

/// `session-bench sweep`: one parameter over a range, every store at every point.
struct Sweep: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Vary one parameter over a list of values; measure every store at each point, interleaved.",
        discussion: """
            Every repeat passes over every value; at each point every store runs once, in an order \
            rotated from point to point, so drift in the machine lands on all stores alike. The table \
            shows medians over repeats; --format csv gives every run; --output sweep.html draws it.

            \(exitStatusHelp)
            """)

    @Option(name: .long, help: "What to vary: \(SweepParameter.allCases.map(\.rawValue).joined(separator: ", ")).")
    var parameter: SweepParameter

    @Option(
        name: .long,
        help: """
            Comma-separated values, e.g. 1,2,4,8 (milliseconds for latency and lifetime; names for allocator: \
            system,jemalloc).
            """)
    var values: String

    @Option(
        name: .long, help: "Passes over all values and stores, 1 to 1000 (default: 3).",
        transform: ArgumentText.whole(InputRange.repeats))
    var repeats: Int?

    @Option(name: .long, help: "Store whose throughput the others are divided by in the table.")
    var baseline: String?

    @OptionGroup var run: RunOptions
    @OptionGroup var output: OutputOptions

    var passes: Int { repeats ?? 3 }

    func validate() throws {
        if let baseline, StoreRegistry.named(baseline) == nil {
            throw ValidationError("--baseline: unknown store '\(Printable.name(baseline))' (see 'session-bench list')")
        }
        if run.scenario.count > 1 || run.scenario.first?.contains(",") == true {
            throw ValidationError("sweep runs one scenario; give a single --scenario")
        }
        // Every point is built and checked before the first run.
        let (stores, points) = try plan()
        let runs = points.count * stores.count * passes
        guard InputRange.sweepRuns.contains(runs) else {
            throw ValidationError(
                "this sweep would be \(runs) runs (values × stores × repeats); "
                    + "at most \(InputRange.sweepRuns.upperBound): give fewer values, stores or repeats")
        }
    }

    /// One point of the sweep: its value, the scenario it runs, and the measuring setup.
    struct Point {
        var value: Double
        var label: String?
        var scenario: Scenario
        var setup: MeasuringSetup
    }

    /// The stores and, for each value, the scenario it runs.
    func plan() throws -> (stores: [StoreDescriptor], points: [Point]) {
        var options = run
        if options.scenario.isEmpty { options.scenario = [parameter.defaultScenario] }
        let stores = try options.resolvedStores()
        guard let base = try options.resolvedScenarios().first else { throw UsageError("no scenario to sweep") }
        var points: [Point] = []
        if parameter == .allocator {
            if run.allocator != nil {
                throw ValidationError("--allocator: a sweep over the allocator sets it at each point; drop --allocator")
            }
            for allocator in try parsedAllocators() {
                let setup = MeasuringSetup.chosen(allocator: allocator, counter: run.allocationCounter)
                do { try setup.validate(inProcess: run.execution.inProcess) } catch {
                    throw UsageError("--values: \(error.description)")
                }
                let index = Double(AllocatorKind.allCases.firstIndex(of: allocator) ?? 0)
                points.append(Point(value: index, label: allocator.rawValue, scenario: base, setup: setup))
            }
            return (stores, points)
        }
        for value in try parsedValues() {
            do {
                points.append(Point(value: value, scenario: try parameter.apply(value, to: base), setup: run.setup))
            } catch {
                throw UsageError("--values: \(error)")
            }
        }
        return (stores, points)
    }

    /// The allocators an allocator sweep compares, in the order given.
    func parsedAllocators() throws -> [AllocatorKind] {
        let names = AllocatorKind.allCases.map(\.rawValue)
        do throws(ListText.Invalid) {
            return try ListText.values(
                values, what: "an allocator (\(names.joined(separator: ", ")))", example: "system,jemalloc"
            ) { AllocatorKind(rawValue: $0) }
        } catch {
            throw ValidationError("--values: \(error.description)")
        }
    }

    /// The values, each read as the option it stands for reads it: decimal digits for a count
    /// (`--tasks`), a decimal number for a rate or milliseconds; nothing trimmed, no item empty
    /// and none twice (``ListText``).
    func parsedValues() throws -> [Double] {
        let whole = parameter == .tasks || parameter == .readersPerWriter
        do throws(ListText.Invalid) {
            return try ListText.values(
                values, what: whole ? "a whole number in decimal digits" : "a decimal number",
                example: whole ? "1,2,4" : "1,2.5,10"
            ) { item in whole ? NumberText.unsigned(item).map { Double($0) } : NumberText.decimal(item) }
        } catch {
            throw ValidationError("--values: \(error.description)")
        }
    }

    mutating func run() async throws {
        let (stores, points) = try plan()
        let base = points[0].scenario
        let schedule = SweepSchedule.order(stores: stores, values: points.map(\.value), repeats: passes)
        let execution = Execution(run.execution, setup: run.setup)
        if run.dryRun {
            try OutputWriter.show(
                "sweep: \(parameter.rawValue) over \(points.count) value(s), \(passes) repeat(s): "
                    + "\(schedule.count) runs\n" + execution.plan(stores, points.map(\.scenario)))
            return
        }
        try run.place()
        if !run.execution.quiet {
            let values = points.map { $0.label ?? InputRange.text($0.value) }.joined(separator: ",")
            Log.progress(
                "session-bench sweep: \(parameter.rawValue) over \(values) in \(base.name), "
                    + "\(stores.count) store(s), \(passes) repeat(s), seed \(base.seed): \(schedule.count) runs")
        }
        var results: [ScenarioResult] = []
        let progress = ProgressLines(total: schedule.count, quiet: run.execution.quiet)
        for step in schedule {
            let point = points.first { $0.value == step.value }!
            var result =
                await execution.run(store: step.store, scenarios: [point.scenario], setup: point.setup).first
                ?? IsolatedRun.failed(step.store, point.scenario, .error, "no result")
            result.sweep = SweepPoint(
                parameter: parameter, value: step.value, repeatIndex: step.repeatIndex, label: point.label)
            results.append(result)
            let value = point.label ?? InputRange.text(step.value)
            progress.record("\(parameter.rawValue)=\(value) \(step.store.name): \(result.verdict.rawValue)")
        }
        let report = ResultsReport(results: results, metadata: .current(command: "sweep"))
        try output.emit(report, quiet: run.execution.quiet) { [baseline] in $0.sweepTable(baseline: baseline) }
        if results.contains(where: { !$0.verdict.passes }) { throw ExitCode(ExitStatus.failed.rawValue) }
    }
}

extension SweepParameter: ExpressibleByArgument {}
