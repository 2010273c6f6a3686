import Foundation
import SessionBench
import SessionContract
import Synchronization

/// Runs each store's scenarios in a child process of this same executable, so a store that
/// crashes takes down only its own process and a store that hangs can be killed.
///
/// The child (`session-bench run-store`) reads its plan as JSON on standard input and writes
/// one `RESULT <json>` line per scenario as it finishes. The child's own watchdog reports
/// hangs; the parent's deadline catches a child that stops answering altogether.
enum IsolatedRun {
    struct Plan: Codable {
        var store: String
        var scenarios: [Scenario]
        var hangTimeoutSeconds: Double
    }

    static let resultPrefix = "RESULT "

    /// Runs `scenarios` for `store` in a child; calls `progress` as each result arrives.
    static func run(
        store: StoreDescriptor, scenarios: [Scenario], hangTimeout: Double,
        progress: @escaping @Sendable (ScenarioResult) -> Void
    ) async -> [ScenarioResult] {
        let plan = Plan(store: store.name, scenarios: scenarios, hangTimeoutSeconds: hangTimeout)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executablePath)
        process.arguments = ["run-store"]
        process.environment = childEnvironment()
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        do {
            try process.run()
        } catch {
            return scenarios.map { failed(store, $0, .error, "could not start the measuring process: \(error)") }
        }
        input.fileHandleForWriting.write((try? JSONEncoder().encode(plan)) ?? Data())
        try? input.fileHandleForWriting.close()

        let collected = Mutex<[ScenarioResult]>([])
        let reader = Thread {
            var buffer = Data()
            let handle = output.fileHandleForReading
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                    buffer.removeSubrange(buffer.startIndex...newline)
                    guard line.hasPrefix(resultPrefix),
                        let result = try? JSONDecoder().decode(ScenarioResult.self, from: Data(line.dropFirst(resultPrefix.count).utf8))
                    else { continue }
                    collected.withLock { $0.append(result) }
                    progress(result)
                }
            }
        }
        reader.start()

        let deadline = ContinuousClock.now + budget(for: scenarios, hangTimeout: hangTimeout)
        var timedOut = false
        while process.isRunning {
            if ContinuousClock.now > deadline {
                timedOut = true
                kill(process.processIdentifier, SIGKILL)
                break
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
        process.waitUntilExit()
        // Let the reader drain what the child wrote before it ended.
        while !reader.isFinished { try? await Task.sleep(for: .milliseconds(5)) }

        var results = collected.withLock { $0 }
        let missing = scenarios.filter { scenario in !results.contains { $0.scenario == scenario.name } }
        for (index, scenario) in missing.enumerated() {
            let result: ScenarioResult
            if timedOut {
                result = failed(store, scenario, .hung, "the measuring process stopped answering and was killed")
            } else if process.terminationReason == .uncaughtSignal {
                let signal = process.terminationStatus
                result = failed(
                    store, scenario, index == 0 ? .crashed : .error,
                    index == 0 ? "the store crashed the process (signal \(signal), \(signalName(signal)))"
                        : "not run: the process crashed in an earlier scenario")
            } else {
                result = failed(
                    store, scenario, index == 0 ? .crashed : .error,
                    "the measuring process exited with status \(process.terminationStatus) before reporting")
            }
            progress(result)
            results.append(result)
        }
        return scenarios.compactMap { scenario in results.first { $0.scenario == scenario.name } }
    }

    static func failed(_ store: StoreDescriptor, _ scenario: Scenario, _ verdict: ScenarioResult.Verdict, _ why: String) -> ScenarioResult {
        var result = ScenarioResult(store: store.name, scenario: scenario, verdict: verdict)
        result.failure = why
        return result
    }

    /// A generous upper bound on how long the child may take.
    static func budget(for scenarios: [Scenario], hangTimeout: Double) -> Duration {
        var seconds = 10.0
        for scenario in scenarios {
            seconds += scenario.isRoundBased ? Double(scenario.rounds) * 0.5 : scenario.duration.secondsValue
            seconds += hangTimeout * 3
        }
        return .milliseconds(Int64(seconds * 1000))
    }

    static var executablePath: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// The child's environment: ours, plus jemalloc preloaded with its thread cache off so
    /// allocation counts are exact (see `AllocationCounter`), when jemalloc is installed.
    static func childEnvironment() -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        if AllocationCounter() == nil, let jemalloc = jemallocPath {
            let preload = environment["LD_PRELOAD"].map { "\(jemalloc):\($0)" } ?? jemalloc
            environment["LD_PRELOAD"] = preload
        }
        if environment["MALLOC_CONF"] == nil { environment["MALLOC_CONF"] = "tcache:false" }
        return environment
    }

    /// Where jemalloc is installed: `SESSION_BENCH_JEMALLOC` (a path, or `off`), else the usual places.
    static var jemallocPath: String? {
        if let chosen = ProcessInfo.processInfo.environment["SESSION_BENCH_JEMALLOC"] {
            return chosen == "off" ? nil : chosen
        }
        let candidates = [
            "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2",
            "/usr/lib64/libjemalloc.so.2", "/usr/lib/libjemalloc.so.2", "/usr/local/lib/libjemalloc.so.2",
        ]
        return candidates.first { FileManager.default.fileExists(atPath: $0) }
    }

    static func signalName(_ signal: Int32) -> String {
        switch signal {
        case SIGSEGV: "SIGSEGV"
        case SIGILL: "SIGILL (a Swift runtime trap)"
        case SIGTRAP: "SIGTRAP (a Swift runtime trap)"
        case SIGABRT: "SIGABRT"
        case SIGBUS: "SIGBUS"
        case SIGKILL: "SIGKILL"
        default: "signal \(signal)"
        }
    }
}

extension Duration {
    var secondsValue: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
