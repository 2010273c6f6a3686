import ArgumentParser
import Foundation
import SessionBench
import SessionContract
import SessionMeasurement

/// Which stores and scenarios to run, and how: shared by `compare`, `stress` and `sweep`.
struct RunOptions: ParsableArguments {
    @Option(name: .long, help: "Comma-separated store names (default: every correct store; see 'list').")
    var stores: String?

    @Option(name: .long, help: "Scenario name; repeat or separate with commas (default: every preset).")
    var scenario: [String] = []

    @Option(
        name: .long, help: "Concurrent callers per scenario, 1 to 100000 (default: each preset's own).",
        transform: ArgumentText.whole(InputRange.tasks))
    var tasks: Int?

    @Option(
        name: .long, help: "How long steady scenarios run, 1ms to 1h, e.g. 500ms, 2s (default: the preset's).",
        transform: ArgumentText.duration(InputRange.durationSeconds, rangeText: "1ms and 1h"))
    var duration: DurationArgument?

    @Option(
        name: .long, help: "Rounds per round-based scenario, 1 to 100000 (default: the preset's).",
        transform: ArgumentText.whole(InputRange.rounds))
    var rounds: Int?

    @Option(
        name: .long,
        help: """
            Seed for faults, latencies and cancellations, 0 to 2^64-1 (default: 1). \
            The same seed reproduces a run.
            """,
        transform: ArgumentText.seed)
    var seed: UInt64?

    @Option(
        name: .long,
        help: "Open loop for steady scenarios: total calls per second, 1 to 1000000000 (default: closed loop).",
        transform: ArgumentText.decimal(InputRange.rate, unit: "calls per second"))
    var rate: Double?

    @Option(
        name: .long,
        help: "Replica processes in the replicas scenarios, \(InputRange.text(InputRange.replicas)) (default: 4).",
        transform: ArgumentText.whole(InputRange.replicas))
    var replicas: Int?

    @Option(
        name: .long,
        help: """
            Real time between the rounds of round-based scenarios, 1ms to 10m, e.g. 6s: for a store whose own refresh \
            rate limit runs on real time. Without it rounds follow at once, and the refreshes such a limit refuses are \
            reported apart, not judged (default: none).
            """,
        transform: ArgumentText.duration(InputRange.paceSeconds, rangeText: "1ms and 10m"))
    var pace: DurationArgument?

    @Option(
        name: .long,
        help: """
            OS threads that call currentToken() in steady scenarios, after the async callers, for stores with a \
            synchronous read, \(InputRange.text(InputRange.syncThreads)); 0 skips that phase (default: as many as \
            --tasks, at most 256).
            """,
        transform: ArgumentText.whole(InputRange.syncThreads))
    var syncThreads: Int?

    @Flag(name: .long, help: "Include stores that are broken on purpose (they are expected to fail).")
    var includeBroken = false

    @OptionGroup var execution: ExecutionOptions

    @Option(
        name: .long,
        help: """
            Pin the measuring processes to these CPUs, e.g. 0 or 0,1 or 0-3 (default: every CPU the system \
            allows). Recorded in every result.
            """,
        transform: ArgumentText.cpus)
    var cpus: [Int]?

    @Option(
        name: .long,
        help: """
            The allocator the measuring processes run on: system or jemalloc (jemalloc needs apt-get install \
            libjemalloc2; default: system).
            """)
    var allocator: AllocatorKind?

    @Option(
        name: .customLong("allocation-counter"),
        help: """
            What counts allocations: interposer (calls and requested bytes; system allocator) or jemalloc (its \
            own statistics, thread cache off; --allocator jemalloc). Default: the allocator's own.
            """)
    var allocationCounter: AllocationCounterKind?

    @Flag(name: .long, help: "Check every option and print what would run, then exit without running anything.")
    var dryRun = false

    /// The allocator and allocation counter of the measuring processes.
    var setup: MeasuringSetup { .chosen(allocator: allocator, counter: allocationCounter) }

    /// What `--tasks`, `--duration`, `--rounds`, `--seed` and `--rate` change in each preset.
    var overrides: ScenarioOverrides {
        ScenarioOverrides(
            tasks: tasks, duration: duration?.duration, rounds: rounds, seed: seed, rate: rate, replicas: replicas,
            pace: pace?.duration, syncThreads: syncThreads)
    }

    func validate() throws {
        try setup.validate(inProcess: execution.inProcess)
        let stores = try resolvedStores()
        let scenarios = try resolvedScenarios()
        if execution.transport == .http, let stored = scenarios.first(where: \.needsStorage) {
            throw UsageError(
                "--transport http: \(stored.name) reaches the server through its session processes' pipes; "
                    + "run the scenarios over storage without --transport http")
        }
        func runsAny(_ store: StoreDescriptor) -> Bool { scenarios.contains { $0.applies(to: store) } }
        if !stores.contains(where: runsAny) {
            let able = StoreRegistry.all.filter(runsAny).map(\.name)
            throw UsageError(
                "the scenarios named run only stores that keep their session in storage"
                    + (scenarios.contains(where: \.sharesStorage) ? " (shared-storage: and share it)" : "")
                    + ", and none of the stores named does; stores that do: \(able.joined(separator: ", "))")
        }
        if let cpus {
            let allowed = CPUPlacement.allowed
            if !allowed.isEmpty, let missing = cpus.first(where: { !allowed.contains($0) }) {
                throw UsageError(
                    "--cpus: CPU \(missing) is not one this process may use; "
                        + "give CPUs from \(CPUPlacement.text(allowed))")
            }
        }
    }

    /// Pins this process, and so every measuring process it starts, to `--cpus`.
    func place() throws {
        guard let cpus else { return }
        do { try CPUPlacement.pin(cpus) } catch { throw UsageError(error.description) }
    }

    func resolvedStores() throws(UsageError) -> [StoreDescriptor] {
        let names = Self.names(in: stores.map { [$0] } ?? [])
        if stores != nil, names.isEmpty {
            throw UsageError("--stores needs at least one name (see 'session-bench list')")
        }
        return try StoreRegistry.resolve(names, includeBroken: includeBroken)
    }

    func resolvedScenarios() throws(UsageError) -> [Scenario] {
        let names = Self.names(in: scenario)
        if !scenario.isEmpty, names.isEmpty {
            throw UsageError("--scenario needs at least one name (see 'session-bench list')")
        }
        return try ScenarioCatalog.selection(names, overrides: overrides)
    }

    /// The names in comma-separated lists, trimmed, empty ones left out.
    private static func names(in lists: [String]) -> [String] {
        lists.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            !$0.isEmpty
        }
    }
}
