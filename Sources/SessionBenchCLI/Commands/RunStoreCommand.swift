import ArgumentParser
import Foundation
import SessionBench
import SessionContract

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
        guard let store = StoreRegistry.named(plan.store) else {
            throw UsageError("unknown store '\(Printable.name(plan.store))'")
        }
        guard InputRange.hangTimeoutSeconds.contains(plan.hangTimeoutSeconds) else {
            throw UsageError("run-store: hangTimeoutSeconds must be \(InputRange.text(InputRange.hangTimeoutSeconds))")
        }
        for scenario in plan.scenarios {
            do { try scenario.validate() } catch { throw UsageError("run-store: \(error)") }
        }
        var runner = ScenarioRunner(hangTimeout: DurationText.duration(seconds: plan.hangTimeoutSeconds))
        runner.sessionProcesses = ChildSessionLauncher()
        runner.transport = try (plan.transport ?? .inProcess).resolved()
        runner.network = HTTPAvailability.current?.transport as? any NetworkTransport
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
        FileHandle.standardOutput.write(
            Data((IsolatedRun.resultPrefix + String(decoding: json, as: UTF8.self) + "\n").utf8))
    }

    static func emitNotRun(_ scenarios: [Scenario], store: String, after hung: String) {
        for rest in scenarios {
            var skipped = ScenarioResult(store: store, scenario: rest, verdict: .notRun)
            skipped.failure = "not run: the store hung in \(hung)"
            emit(skipped)
        }
    }
}
