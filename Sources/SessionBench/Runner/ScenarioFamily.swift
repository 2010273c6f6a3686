import SessionContract
import SessionMeasurement
import SessionOracle

/// What a family's driver is given for one run: the runner (its options and transports), the
/// store, the scenario, the oracle that collects violations, the starvation watch, and the
/// measuring process's allocation counter.
struct DriverContext {
    let runner: ScenarioRunner
    let descriptor: StoreDescriptor
    let scenario: Scenario
    let oracle: Oracle
    let watch: StarvationWatch
    let counter: AllocationCounter?
}

/// A family's driver: it holds its run's ``DriverContext`` and reads the runner, the store, the
/// scenario, the oracle and the watch through it, so no driver keeps copies of its own.
protocol ContextDriver {
    var context: DriverContext { get }
}

extension ContextDriver {
    var runner: ScenarioRunner { context.runner }
    var descriptor: StoreDescriptor { context.descriptor }
    var scenario: Scenario { context.scenario }
    var oracle: Oracle { context.oracle }
    var watch: StarvationWatch { context.watch }
}

/// One family of scenarios, in a folder of its own: the kinds it runs, what its runs judge, how
/// reports describe it, and its driver.
///
/// A new kind is a case of ``Scenario/Kind`` (`Scenarios/Scenario.swift`) with its preset
/// (`Scenarios/ScenarioCatalog.swift`), a
/// family in a folder of its own (or a kind added to one), and one line in
/// ``ScenarioFamilies/all``.
protocol ScenarioFamily: SendableMetatype {
    /// The kinds this family runs; each kind belongs to exactly one family.
    static var kinds: [Scenario.Kind] { get }
    /// What a store must declare to run `kind`, or `nil` when every store runs it.
    static func requirement(_ kind: Scenario.Kind) -> StoreRequirement?
    /// The invariants a run of `kind` judges (see ``Scenario/Kind/judgedInvariants``).
    static func judgedInvariants(_ kind: Scenario.Kind) -> [Invariant]
    /// What happens in `scenario`, in a few words, for `list` and reports.
    static func summary(_ scenario: Scenario) -> String
    /// The operations whose latency heads a run's report, the first one measured.
    static func headlineOperations(_ kind: Scenario.Kind) -> [OperationKind]
    /// How `result`'s own figures contradict what `scenario` does — no restart in a crash-restart
    /// run whose schedule restarts a live session, no refresh in a storm, no read in steady reads
    /// — or `nil` when they do not. A run that did not do its scenario's work is never a pass
    /// (``ScenarioRunner/decide(_:of:)``). Only what every run of the scenario does, whatever the
    /// store, may be asked: a quiet run that is right to be quiet is no contradiction.
    static func contradiction(_ result: ScenarioResult, of scenario: Scenario) -> String?
    /// Runs the scenario; the driver writes its figures into `outcome`.
    static func run(_ context: DriverContext, outcome: DriverOutcome) async -> ScenarioResult
    /// The CSV columns of the family's own figures, after the shared ones; empty in other
    /// families' rows. None by default.
    static var columns: [CSVColumn] { get }
    /// The promise beyond the base contract that the family judges for a store that makes it
    /// (its ``requirement(_:)``), as the report's coverage block names it when it could not be
    /// judged: `persistence I14–I17`. `nil` by default.
    static var promise: String? { get }
    /// What the family's figures mean, for the report's notes, when kinds of `ran` are its
    /// (`crash-restart's p50/p99 are of the storage's saves`). None by default.
    static func notes(ran: Set<Scenario.Kind>) -> [String]
}

extension ScenarioFamily {
    static var columns: [CSVColumn] { [] }
    static var promise: String? { nil }
    static func notes(ran: Set<Scenario.Kind>) -> [String] { [] }

    /// The session invariants judged in the scenarios over one store: I1–I13, I15, I16, I26, I27.
    static var sessionInvariants: [Invariant] {
        [
            .singleFlight, .sameOutcome, .noHang, .fresh, .monotonic, .staleRejectionDoesNotRefresh, .noReuse,
            .signOutFence, .noCrossUserLeak, .failureSharedNotSticky, .cancellationIsolated, .served, .sessionKept,
            .durableRotation, .signOutDurable, .genuine, .revocationFinal,
        ]
    }
}
