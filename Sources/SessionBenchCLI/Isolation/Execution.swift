import Foundation
import SessionBench
import SessionContract
import SessionMeasurement
import SessionStorage
import Synchronization

/// Runs stores through scenarios: each store in a measuring process of its own, or every
/// store in this process with `--in-process`. The one way `compare`, `stress`, `sweep` and
/// `check` run a store.
struct Execution {
    /// The command line's execution options, whole: the hang timeout, in process or isolated, the
    /// transport, and whether progress lines are kept quiet.
    var options: ExecutionOptions
    /// The allocator and allocation counter of the measuring processes.
    var setup: MeasuringSetup

    init(_ options: ExecutionOptions, setup: MeasuringSetup) {
        self.options = options
        self.setup = setup
    }

    var quiet: Bool { options.quiet }

    /// Every store through every scenario, store by store, `repeats` times, with a numbered
    /// progress line per result unless `quiet`. Each pass starts one store further along the
    /// list, so drift in the machine lands on every store alike; with more than one pass every
    /// result carries its pass in `repeatIndex`.
    func run(stores: [StoreDescriptor], scenarios: [Scenario], repeats: Int = 1) async -> [ScenarioResult] {
        let plan = stores.map { ($0, Self.scenarios(scenarios, for: $0)) }.filter { !$0.1.isEmpty }
        // Sessions a killed run left on disk go before this run makes its own.
        if scenarios.contains(where: \.needsStorage) {
            StorageRoots.sweep()
            StorageRoots.sweep(servers: scenarios.compactMap { $0.storage.flatMap(StorageBackendCatalog.named) })
        }
        if !quiet, let note = Self.storageNote(stores: stores, scenarios: scenarios) { Log.progress(note) }
        let progress = ProgressLines(total: plan.map(\.1.count).reduce(0, +) * repeats, quiet: quiet)
        var results: [ScenarioResult] = []
        for pass in 0..<repeats {
            for offset in plan.indices {
                let (store, scenarios) = plan[(offset + pass) % plan.count]
                let label = repeats > 1 ? "pass \(pass + 1)/\(repeats): " : ""
                var batch = await run(store: store, scenarios: scenarios) { result in
                    progress.record(label + "\(result.store) × \(result.scenario): \(result.verdict.rawValue)")
                }
                if repeats > 1 { for index in batch.indices { batch[index].repeatIndex = pass } }
                results += batch
            }
        }
        return results
    }

    /// The scenarios `store` can run: those over storage only for stores that keep their
    /// session in it (`StoreDescriptor.persistsSession`), and `shared-storage` only for those
    /// that share it (`StoreDescriptor.sharesStorage`).
    static func scenarios(_ scenarios: [Scenario], for store: StoreDescriptor) -> [Scenario] {
        scenarios.filter { $0.applies(to: store) }
    }

    /// A note for the stores a run leaves out of its scenarios over storage; `nil` if none.
    static func storageNote(stores: [StoreDescriptor], scenarios: [Scenario]) -> String? {
        var notes: [String] = []
        if scenarios.contains(where: { $0.needsStorage && !$0.sharesStorage }) {
            let left = stores.filter { !$0.persistsSession }.map(\.name)
            if !left.isEmpty {
                notes.append(
                    "note: \(left.joined(separator: ", ")) keep no storage (StoreDescriptor.persistsSession) "
                        + "and do not run the scenarios over storage")
            }
        }
        if scenarios.contains(where: \.sharesStorage) {
            let left = stores.filter { !$0.sharesStorage }.map(\.name)
            if !left.isEmpty {
                notes.append(
                    "note: \(left.joined(separator: ", ")) do not share a storage with other instances "
                        + "(StoreDescriptor.sharesStorage) and do not run shared-storage")
            }
        }
        return notes.isEmpty ? nil : notes.joined(separator: "\n")
    }

    /// `store` through `scenarios` in order, one result per scenario; `progress` hears each
    /// result as it arrives. Isolated, one measuring process runs all of `scenarios`, started
    /// with `setup` (by default the run's own).
    func run(
        store: StoreDescriptor, scenarios: [Scenario], setup: MeasuringSetup? = nil,
        progress: @escaping @Sendable (ScenarioResult) -> Void = { _ in }
    ) async -> [ScenarioResult] {
        let setup = setup ?? self.setup
        guard scenarios.contains(where: \.needsStorage) else {
            return await run(store: store, scenarios: scenarios, setup: setup, storageRoot: nil, progress: progress)
        }
        // Scenarios over storage keep their folders under a root this process owns, removed at the
        // end or by a signal (or, past a SIGKILL, by the next run). Without one they cannot run:
        // each ends in error, saying why, and the others run.
        switch StorageRoots.make() {
        case .success(let root):
            defer { StorageRoots.retire(root) }
            return await run(store: store, scenarios: scenarios, setup: setup, storageRoot: root, progress: progress)
        case .failure(let refusal):
            let others = scenarios.filter { !$0.needsStorage }
            var ran =
                others.isEmpty
                ? []
                : await run(store: store, scenarios: others, setup: setup, storageRoot: nil, progress: progress)[...]
            return scenarios.map { scenario in
                guard scenario.needsStorage else { return ran.removeFirst() }
                let result = IsolatedRun.failed(store, scenario, .error, refusal.description)
                progress(result)
                return result
            }
        }
    }

    /// `store` through `scenarios`, their storage folders under `storageRoot`.
    private func run(
        store: StoreDescriptor, scenarios: [Scenario], setup: MeasuringSetup, storageRoot: String?,
        progress: @escaping @Sendable (ScenarioResult) -> Void
    ) async -> [ScenarioResult] {
        guard options.inProcess else {
            return await IsolatedRun.run(
                store: store, scenarios: scenarios, hangTimeout: options.hangTimeout, setup: setup,
                transport: options.transport, storageRoot: storageRoot, progress: progress)
        }
        // In process, this process is the measuring one: it counts with the chosen counter.
        setenv(AllocationCounter.counterVariable, setup.counter.rawValue, 1)
        if let storageRoot { setenv(StorageFolders.rootVariable, storageRoot, 1) }
        defer { if storageRoot != nil { unsetenv(StorageFolders.rootVariable) } }
        var results: [ScenarioResult] = []
        for scenario in scenarios {
            let result = await runner.run(store, scenario)
            progress(result)
            results.append(result)
        }
        return results
    }

    /// The in-process runner. A store that blocks every thread of the cooperative pool
    /// leaves nothing to run the rest: the verdict is printed and the process exits.
    private var runner: ScenarioRunner {
        // The transport was checked when the options were read.
        var runner = ScenarioRunner.commandLine(
            hangTimeout: options.hangTimeout, transport: try? options.transport.resolved())
        runner.onStarvation = { hung in
            let report = ResultsReport(results: [hung], metadata: .current(command: "compare --in-process"))
            print(report.table(), terminator: "")
            Log.progress(
                "session-bench: the store blocked every thread of the cooperative pool; stopping "
                    + "(run without --in-process to go on with the other stores)")
            Foundation.exit(ExitStatus.failed.rawValue)
        }
        return runner
    }

    /// What a dry run prints: the stores and each scenario's parameters, one per line.
    func plan(_ stores: [StoreDescriptor], _ scenarios: [Scenario], repeats: Int = 1) -> String {
        var lines = [
            "would run \(stores.count) store(s) × \(scenarios.count) scenario(s), "
                + (repeats > 1 ? "\(repeats) repeats, " : "")
                + (options.transport == .http ? "over http, " : "")
                + "hang timeout \(InputRange.text(options.hangTimeout.secondsValue))s, allocator \(setup.allocator.rawValue), "
                + "allocations counted by the \(setup.counter.rawValue)"
        ]
        lines.append("  stores: " + stores.map(\.name).joined(separator: ", "))
        for scenario in scenarios {
            let size =
                scenario.isRoundBased
                ? "\(scenario.rounds) round\(scenario.rounds == 1 ? "" : "s")"
                : "\(InputRange.text(scenario.duration.secondsValue))s"
            lines.append("  \(scenario.name): \(scenario.tasks) callers, \(size), seed \(scenario.seed)")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

extension ScenarioRunner {
    /// The command line's runner, the same in `compare`'s own process and in each measuring
    /// process (`run-store`): session processes started from this executable, stores reaching
    /// the server over `transport`, and `replicas` served over HTTP where the build has it.
    static func commandLine(hangTimeout: Duration, transport: (any EndpointTransport)?) -> ScenarioRunner {
        var runner = ScenarioRunner(hangTimeout: hangTimeout)
        runner.sessionProcesses = ChildSessionLauncher()
        runner.transport = transport
        runner.network = HTTPAvailability.current?.transport as? any NetworkTransport
        return runner
    }
}
