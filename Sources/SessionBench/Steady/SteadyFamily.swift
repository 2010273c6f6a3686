import SessionContract
import SessionOracle

/// `steady-reads`: callers read a long-lived token as fast as they can, or at a rate, with the
/// synchronous read on OS threads beside them (``SteadyDriver``, ``SyncReadDriver``).
enum SteadyFamily: ScenarioFamily {
    static let kinds: [Scenario.Kind] = [.steadyReads]
    static func requirement(_ kind: Scenario.Kind) -> StoreRequirement? { nil }

    static func judgedInvariants(_ kind: Scenario.Kind) -> [Invariant] { sessionInvariants }

    static func summary(_ scenario: Scenario) -> String {
        guard let interval = scenario.writeInterval else {
            return "callers read a long-lived token as fast as they can"
        }
        return
            "callers read as fast as they can while a writer reports a 401 every \(Format.nanoseconds(Double(interval.nanosecondsClamped)))"
    }

    static func headlineOperations(_ kind: Scenario.Kind) -> [OperationKind] { [.read, .rejection] }

    /// Steady reads read: a run that served none did not run. (Refreshes are not asked for: the
    /// token is long-lived, and a writer's 401s are the store's to answer.)
    static func contradiction(_ result: ScenarioResult, of scenario: Scenario) -> String? {
        result.operations == 0 ? "no read was served" : nil
    }

    static func run(_ context: DriverContext, outcome: DriverOutcome) async -> ScenarioResult {
        await SteadyDriver(context: context).run(counter: context.counter, outcome: outcome).finished()
    }
}
