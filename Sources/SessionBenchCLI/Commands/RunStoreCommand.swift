import ArgumentParser
import Foundation
import SessionBench
import SessionContract

/// The measuring child of an isolated run. Not for people: reads its plan as one line on standard
/// input and answers with a line per scenario started and per result (``RunStoreLine``).
struct RunStore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run-store", abstract: "Measure one store (used internally by compare and stress).",
        shouldDisplay: false)

    mutating func run() async throws {
        Lifeline.watch()
        var lines: [String] = []
        PipeLines.forEach(in: 0) { lines.append($0) }
        guard let first = lines.first, case .plan(let plan)? = RunStoreLine(line: first) else {
            throw UsageError("run-store expects its plan as one line on standard input (it is started by compare)")
        }
        // Standard output carries the protocol alone from here on.
        let output = LineOutput()
        guard let store = StoreRegistry.named(plan.store) else {
            throw UsageError("unknown store '\(Printable.name(plan.store))'")
        }
        guard InputRange.hangTimeoutSeconds.contains(plan.hangTimeout.secondsValue) else {
            throw UsageError("run-store: the hang timeout must be \(InputRange.text(InputRange.hangTimeoutSeconds)) s")
        }
        for scenario in plan.scenarios {
            do { try scenario.validate() } catch { throw UsageError("run-store: \(error)") }
        }
        var runner = ScenarioRunner.commandLine(
            hangTimeout: plan.hangTimeout, transport: try (plan.transport ?? .inProcess).resolved())
        for (index, scenario) in plan.scenarios.enumerated() {
            let rest = Array(plan.scenarios.dropFirst(index + 1))
            // A store that blocks every pool thread stops this process from running tasks: the
            // watchdog's thread writes the verdict, and the rest as not run, and ends it.
            runner.onStarvation = { hung in
                output.send(RunStoreLine.result(hung).line)
                Self.emitNotRun(rest, store: store.name, after: scenario.name, to: output)
                Foundation.exit(0)
            }
            output.send(RunStoreLine.started(scenario: scenario.name).line)
            let result = await runner.run(store, scenario)
            output.send(RunStoreLine.result(result).line)
            if result.verdict == .hung {
                // Callers are still stuck inside the store; nothing after this would be trustworthy.
                Self.emitNotRun(rest, store: store.name, after: scenario.name, to: output)
                Foundation.exit(0)
            }
        }
    }

    static func emitNotRun(_ scenarios: [Scenario], store: String, after hung: String, to output: LineOutput) {
        for rest in scenarios {
            var skipped = ScenarioResult(store: store, scenario: rest, verdict: .notRun)
            skipped.failure = "not run: the store hung in \(hung)"
            output.send(RunStoreLine.result(skipped).line)
        }
    }
}
