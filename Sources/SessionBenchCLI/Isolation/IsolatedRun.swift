import Foundation
import SessionBench
import SessionContract
import SessionMeasurement
import Synchronization

/// Runs each store's scenarios in a child process of this same executable, so a store that
/// crashes takes down only its own process and a store that hangs can be killed.
///
/// The child (`session-bench run-store`) reads its plan as one line on standard input and writes
/// a line as each scenario starts and one with its result as it finishes (``RunStoreLine``). The child's own watchdog reports
/// hangs; the parent's deadline catches a child that stops answering altogether.
enum IsolatedRun {
    struct Plan: Codable {
        var store: String
        var scenarios: [Scenario]
        var hangTimeout: Duration
        /// How the store reaches the server; in process when absent.
        var transport: TransportChoice?

        init(store: String, scenarios: [Scenario], hangTimeout: Duration, transport: TransportChoice = .inProcess) {
            self.store = store
            self.scenarios = scenarios
            self.hangTimeout = hangTimeout
            self.transport = transport
        }
    }

    /// Runs `scenarios` for `store` in a child; calls `progress` as each result arrives.
    ///
    /// The child is started with `posix_spawn` and reaped with `waitpid`, both ours: whether a
    /// crashed child is noticed must not depend on anything else in the process (Foundation's
    /// `Process` left a crashed child unreaped under ThreadSanitizer and spun waiting on it).
    ///
    /// Scenarios over storage keep their folders under `storageRoot`, which this process owns, so
    /// they go even when the child is killed past its budget.
    static func run(
        store: StoreDescriptor, scenarios: [Scenario], hangTimeout: Duration, setup: MeasuringSetup,
        transport: TransportChoice = .inProcess, storageRoot: String?,
        progress: @escaping @Sendable (ScenarioResult) -> Void
    ) async -> [ScenarioResult] {
        let plan = Plan(store: store.name, scenarios: scenarios, hangTimeout: hangTimeout, transport: transport)
        var environment = childEnvironment(setup)
        if let storageRoot { environment[StorageFolders.rootVariable] = storageRoot }
        let child: Child
        do {
            child = try Child.spawn(executable: executablePath, arguments: ["run-store"], environment: environment)
        } catch {
            return scenarios.map { failed(store, $0, .error, "could not start the measuring process: \(error)") }
        }
        child.send(Data((RunStoreLine.plan(plan).line + "\n").utf8))
        let spawned = ContinuousClock.now

        let collected = Mutex<(results: [ScenarioResult], started: String?)>(([], nil))
        let reader = Thread {
            child.readLines { line in
                switch RunStoreLine(line: line) {
                case .started(let scenario)?:
                    collected.withLock { $0.started = scenario }
                case .result(let result)?:
                    collected.withLock { $0.results.append(result) }
                    progress(result)
                case .plan?, nil:
                    break
                }
            }
        }
        reader.start()
        let errors = Mutex<[String]>([])
        let errorReader = Thread {
            child.readErrorLines { line in
                errors.withLock { lines in
                    lines.append(line)
                    if lines.count > 200 { lines.removeFirst(lines.count - 200) }
                }
            }
        }
        errorReader.start()

        var starved = false
        let (exit, timedOut) = await child.end(
            by: ContinuousClock.now + budget(for: scenarios, hangTimeout: hangTimeout), polling: .milliseconds(10),
            readers: [reader, errorReader]
        ) {
            // A child that spent its life waiting for a CPU it was not given was not stuck in the
            // store: the machine was too busy for a verdict (BusyOrHung).
            starved =
                CPUTimes.process(child.pid).map { life in
                    BusyOrHung.starved(
                        before: CPUTimes(), after: life, seconds: (ContinuousClock.now - spawned).secondsValue,
                        cpus: CPUPlacement.allowed.count)
                } ?? false
        }

        let (arrived, started) = collected.withLock { ($0.results, $0.started) }
        var results = arrived
        let missing = scenarios.filter { scenario in !results.contains { $0.scenario == scenario.name } }
        // The scenario the child was in when it died; the ones after it never started.
        let interrupted = missing.first { $0.name == started } ?? missing.first
        let trap = TrapMessage.find(in: errors.withLock { $0 })
        for scenario in missing {
            let result: ScenarioResult
            if scenario.name != interrupted?.name {
                result = failed(
                    store, scenario, .notRun,
                    "not run: the measuring process ended in \(interrupted?.name ?? "an earlier scenario")")
            } else if timedOut, starved {
                result = failed(
                    store, scenario, .error,
                    "the measuring process waited for a CPU most of its time budget and was given little: "
                        + "the machine is too busy to tell a slow store from a stuck one "
                        + "(run on a quieter machine, or raise --hang-timeout)")
            } else if timedOut {
                result = failed(
                    store, scenario, .hung,
                    "the measuring process stopped answering and was killed after its time budget"
                        + (trap.map { "; it had printed: \($0)" } ?? ""))
            } else if let signal = exit?.interruption {
                // Not this process's stop (that reports nothing): a signal sent to the child alone.
                result = failed(store, scenario, .error, ProcessEnd.interrupted("the measuring process", by: signal))
            } else if case .signaled(let signal)? = exit {
                result = failed(
                    store, scenario, .crashed,
                    "the store crashed the process (signal \(signal), \(signalName(signal)))"
                        + (trap.map { ": \($0)" } ?? ""))
            } else {
                let status: Int32 = if case .exited(let code)? = exit { code } else { -1 }
                result = failed(
                    store, scenario, .crashed,
                    "the measuring process exited with status \(status) before reporting"
                        + (trap.map { ": \($0)" } ?? ""))
            }
            progress(result)
            results.append(result)
        }
        return scenarios.compactMap { scenario in results.first { $0.scenario == scenario.name } }
    }

    static func failed(_ store: StoreDescriptor, _ scenario: Scenario, _ verdict: ScenarioResult.Verdict, _ why: String)
        -> ScenarioResult
    {
        var result = ScenarioResult(store: store.name, scenario: scenario, verdict: verdict)
        result.failure = why
        return result
    }

    /// A generous upper bound on how long the child may take: a crowd of 100,000 callers
    /// takes seconds to start and settle each round, so the bound grows with the crowd, and a
    /// paced scenario's rounds wait for the pace (``Scenario/pacingSeconds``).
    static func budget(for scenarios: [Scenario], hangTimeout: Duration) -> Duration {
        let hangTimeout = hangTimeout.secondsValue
        var seconds = 10.0
        for scenario in scenarios {
            let crowd = Double(scenario.tasks) * 50e-6
            if scenario.needsStorage {
                // A process per round, each with a hang timeout of its own, and as many again for
                // crash points retried on a revoked session: slow fsyncs are not a hang.
                seconds += Double(scenario.rounds) * 2 * (2 + hangTimeout)
            } else {
                seconds +=
                    scenario.isRoundBased
                    ? Double(scenario.rounds) * (0.5 + crowd) : scenario.duration.secondsValue + 2 * crowd
            }
            seconds += hangTimeout * 3 + scenario.pacingSeconds
            if !scenario.isRoundBased, scenario.arrivalRate == nil {
                // The synchronous phase of stores that have one: its loop as long again, the
                // plain-load floor, and a hang timeout of its own.
                seconds += scenario.duration.secondsValue + 1 + hangTimeout
            }
        }
        return DurationText.duration(seconds: seconds)
    }

    static var executablePath: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// The child's environment: ours, with the allocator and allocation counter `setup` names.
    static func childEnvironment(_ setup: MeasuringSetup) -> [String: String] {
        var environment = setup.environment(base: ProcessInfo.processInfo.environment)
        // A crash is reported from its trap message; a symbolicated backtrace of the child
        // would take seconds and is not shown.
        if environment["SWIFT_BACKTRACE"] == nil { environment["SWIFT_BACKTRACE"] = "enable=no" }
        return environment
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
