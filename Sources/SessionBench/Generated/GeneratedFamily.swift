import SessionContract
import SessionOracle

/// `generated`: rounds of small generated programs of the contract's operations, every caller at
/// once (``GeneratedDriver``); `explore --scenario generated` runs the same programs with the
/// schedule choosing each step and each interleaving.
enum GeneratedFamily: ScenarioFamily {
    static let kinds: [Scenario.Kind] = [.generated]
    static func requirement(_ kind: Scenario.Kind) -> StoreRequirement? { nil }
    static func judgedInvariants(_ kind: Scenario.Kind) -> [Invariant] { sessionInvariants }

    static func summary(_ scenario: Scenario) -> String {
        "generated programs: each of \(scenario.tasks) callers a few reads, 401s, expiries, sign-ins, "
            + "sign-outs and cancellations, all at once"
    }

    static func headlineOperations(_ kind: Scenario.Kind) -> [OperationKind] { [.read, .rejection, .syncRead] }

    /// Every run plays its programs' calls, and the seed's programs expire the token: a run that
    /// served no call, or never refreshed, did not play them.
    static func contradiction(_ result: ScenarioResult, of scenario: Scenario) -> String? {
        if result.operations == 0 { return "no call was served in \(scenario.rounds) program(s)" }
        if result.refreshCalls == 0, scenario.rounds >= GeneratedDriver.roundsWithAnExpiry {
            return "the server saw no refresh call in \(scenario.rounds) program(s), though they expire the token"
        }
        return nil
    }

    static func run(_ context: DriverContext, outcome: DriverOutcome) async -> ScenarioResult {
        var outcome = outcome
        await GeneratedDriver(context: context).run(outcome: &outcome)
        return outcome.finished()
    }
}
