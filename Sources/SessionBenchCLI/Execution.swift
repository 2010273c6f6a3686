import Foundation
import SessionBench
import SessionContract
import Synchronization

/// Runs stores × scenarios, isolated or in process, printing a progress line per result.
struct Execution {
    let stores: [StoreDescriptor]
    let scenarios: [Scenario]
    let options: RunOptions
    let quiet: Bool

    func run() async -> [ScenarioResult] {
        let total = stores.count * scenarios.count
        let done = Mutex(0)
        let started = ContinuousClock.now
        let progress: @Sendable (ScenarioResult) -> Void = { result in
            let index = done.withLock { count in
                count += 1
                return count
            }
            guard !quiet else { return }
            let elapsed = (ContinuousClock.now - started).secondsValue
            Log.progress(
                "[\(index)/\(total)] \(result.store) × \(result.scenario): \(result.verdict.rawValue)"
                    + String(format: "  (%.1fs)", elapsed))
        }
        var results: [ScenarioResult] = []
        // In process, this process is the measuring one: it counts with the chosen counter.
        if options.execution.inProcess { setenv(AllocationCounter.counterVariable, options.setup.counter.rawValue, 1) }
        for store in stores {
            if options.execution.inProcess {
                for scenario in scenarios {
                    let result = await options.runner.run(store, scenario)
                    progress(result)
                    results.append(result)
                }
            } else {
                results += await IsolatedRun.run(
                    store: store, scenarios: scenarios, hangTimeout: options.execution.hangTimeout, setup: options.setup, progress: progress)
            }
        }
        return results
    }
}

enum Log {
    /// A line on standard error: progress and notes, never results.
    static func progress(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}
