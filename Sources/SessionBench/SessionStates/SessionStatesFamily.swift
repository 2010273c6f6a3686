import SessionContract
import SessionOracle

/// `session-states`: subscribers to the store's state through a session's whole lifecycle
/// (``SessionStatesDriver``).
enum SessionStatesFamily: ScenarioFamily {
    static let kinds: [Scenario.Kind] = [.sessionStates]
    static func requirement(_ kind: Scenario.Kind) -> StoreRequirement? { .stateStream }
    static let promise: String? = "state stream I23–I25"

    static func judgedInvariants(_ kind: Scenario.Kind) -> [Invariant] {
        [
            .singleFlight, .noHang, .fresh, .monotonic, .staleRejectionDoesNotRefresh, .noReuse, .signOutFence,
            .noCrossUserLeak, .served, .sessionKept, .observersSeeFinalState, .noSignedInAfterSignOut, .stateOrder,
            .genuine, .revocationFinal,
        ]
    }

    static func summary(_ scenario: Scenario) -> String {
        "1, then \(scenario.tasks), subscribers to the store's state through sign-in, refresh, "
            + "sign-out racing a refresh, user switch, revocation"
    }

    static func headlineOperations(_ kind: Scenario.Kind) -> [OperationKind] { [.observerLagMany, .observerLagOne] }

    /// Every round signs in and lets the token expire: a run with no refresh call did not play one.
    static func contradiction(_ result: ScenarioResult, of scenario: Scenario) -> String? {
        if result.operations == 0 { return "no call was served in \(scenario.rounds) round(s)" }
        if result.refreshCalls == 0 {
            return "the server saw no refresh call in \(scenario.rounds) round(s), though each lets the token expire"
        }
        return nil
    }

    static func run(_ context: DriverContext, outcome: DriverOutcome) async -> ScenarioResult {
        var outcome = outcome
        let recorded = await SessionStatesDriver(context: context).run(outcome: &outcome)
        context.oracle.record(recorded.flatMap(StatesJudge.judge))
        return outcome.finished()
    }
}
