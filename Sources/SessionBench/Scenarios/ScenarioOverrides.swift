/// What a run changes in the presets it runs: each field that is set replaces the preset's
/// own value, and a field left `nil` leaves the preset alone.
///
/// The command line's `--tasks`, `--duration`, `--rounds`, `--seed` and `--rate`, a
/// thresholds file's `run` section, the stress command's varied crowds and a sweep over
/// `tasks` all change a scenario through here, so that a smaller crowd cuts the accounts in
/// one place: a family scenario never has more accounts than callers.
public struct ScenarioOverrides: Sendable, Hashable {
    /// Concurrent callers; the scenario's accounts are cut to this many if there are more.
    public var tasks: Int?
    /// How long a steady scenario runs.
    public var duration: Duration?
    /// How many rounds a round-based scenario runs.
    public var rounds: Int?
    /// Seeds the server's faults and latencies and the choice of cancelled callers.
    public var seed: UInt64?
    /// Total calls per second across all callers (open loop). Steady scenarios only: a
    /// round-based scenario keeps its rounds and ignores it.
    public var rate: Double?
    /// Replica processes. `replicas` scenarios only: the others ignore it.
    public var replicas: Int?
    /// Real time between rounds. Round-based scenarios only: steady ones ignore it.
    public var pace: Duration?
    /// OS threads of the synchronous-read phase (0 skips it). Steady scenarios only.
    public var syncThreads: Int?

    public init(
        tasks: Int? = nil, duration: Duration? = nil, rounds: Int? = nil, seed: UInt64? = nil, rate: Double? = nil,
        replicas: Int? = nil, pace: Duration? = nil, syncThreads: Int? = nil
    ) {
        self.syncThreads = syncThreads
        self.replicas = replicas
        self.pace = pace
        self.tasks = tasks
        self.duration = duration
        self.rounds = rounds
        self.seed = seed
        self.rate = rate
    }

    /// `scenario` with every field that is set applied. Not validated: a value out of range
    /// is for ``Scenario/validate()`` to name.
    public func applied(to scenario: Scenario) -> Scenario {
        var scenario = scenario
        if let tasks {
            scenario.tasks = tasks
            scenario.accounts = min(scenario.accounts, tasks)
        }
        if let duration { scenario.duration = duration }
        if let rounds { scenario.rounds = rounds }
        if let seed { scenario.seed = seed }
        if let rate, scenario.kind == .steadyReads { scenario.arrivalRate = rate }
        if let replicas, scenario.kind == .replicas { scenario.replicas = replicas }
        if let pace, scenario.isRoundBased { scenario.pace = pace }
        if let syncThreads, scenario.kind == .steadyReads { scenario.syncThreads = syncThreads }
        return scenario
    }
}
