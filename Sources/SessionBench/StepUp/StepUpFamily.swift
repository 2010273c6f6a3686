import SessionContract
import SessionOracle

/// `step-up`: bursts of requests through API objects kept across users, with the user's prompt
/// held open, denied, dismissed or expired (``StepUpDriver``).
enum StepUpFamily: ScenarioFamily {
    static let kinds: [Scenario.Kind] = [.stepUp]
    static func requirement(_ kind: Scenario.Kind) -> StoreRequirement? { .stepUp }
    static let promise: String? = "step-up I18–I22"

    /// The session's own calls there are judged by the contract's model too.
    static func judgedInvariants(_ kind: Scenario.Kind) -> [Invariant] {
        [
            .singleFlight, .noHang, .fresh, .monotonic, .staleRejectionDoesNotRefresh, .noReuse, .signOutFence,
            .noCrossUserLeak, .cancellationIsolated, .served, .sessionKept, .promptSingleFlight, .stepUpSharedNotSticky,
            .elevationEndsWithSession, .stepUpIndependent, .clientFollowsSession, .genuine, .revocationFinal,
        ]
    }

    static func summary(_ scenario: Scenario) -> String {
        "clinical-request bursts through API objects kept across users: step-up prompts held open, "
            + "denied, dismissed, expired; sign-out during a prompt"
    }

    static func headlineOperations(_ kind: Scenario.Kind) -> [OperationKind] { [.elevatedRead] }

    /// Every round sends bursts, and its first burst finds no elevated token: the user is prompted.
    static func contradiction(_ result: ScenarioResult, of scenario: Scenario) -> String? {
        guard let figures = result.stepUp, figures.bursts > 0 else {
            return "no burst of clinical requests ran in \(scenario.rounds) round(s)"
        }
        if figures.prompts == 0 {
            return "no step-up prompt in \(figures.bursts) burst(s), though each round's first needs one"
        }
        return nil
    }

    static func run(_ context: DriverContext, outcome: DriverOutcome) async -> ScenarioResult {
        var outcome = outcome
        await StepUpDriver(context: context).run(outcome: &outcome)
        return outcome.finished()
    }
}
