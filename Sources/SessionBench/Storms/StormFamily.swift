import SessionContract
import SessionOracle

/// The storm scenarios: rounds of expiries, 401s, sign-outs and user switches against one store
/// (or one per account), driven by ``RoundDriver``.
enum StormFamily: ScenarioFamily {
    static let kinds: [Scenario.Kind] = [
        .expiryStorm, .rejectionStorm, .signOutRace, .userSwitch, .flakyServer, .cancellationStorm, .family,
        .scaleStorm,
    ]
    static func requirement(_ kind: Scenario.Kind) -> StoreRequirement? { nil }

    static func judgedInvariants(_ kind: Scenario.Kind) -> [Invariant] { sessionInvariants }

    static func summary(_ scenario: Scenario) -> String {
        switch scenario.kind {
        case .rejectionStorm: "every caller reports a 401 for the same token; then stale 401s"
        case .signOutRace: "callers wait on a refresh; the user signs out before it lands"
        case .userSwitch: "callers wait on user A's refresh; user B signs in before it lands"
        case .flakyServer: "expiry storms against a server that fails or times out at random"
        case .cancellationStorm: "expiry storms; part of the waiters are cancelled mid-wait"
        case .family: "expiry storms over \(scenario.accounts) accounts, each with its own store"
        case .scaleStorm: "one expiry storm of a huge crowd; memory per waiting caller"
        default: "the token expires, then every caller asks at once"
        }
    }

    static func headlineOperations(_ kind: Scenario.Kind) -> [OperationKind] {
        kind == .rejectionStorm ? [.rejection, .refreshWait, .read] : [.refreshWait, .rejection, .read]
    }

    /// Every storm kind's first round holds a refresh in flight (an expiry, a 401, a fault, a
    /// sign-out or user switch racing it), so a run with no refresh call did not play it; the
    /// rounds of sign-outs and user switches count no storms, the others one per round.
    static func contradiction(_ result: ScenarioResult, of scenario: Scenario) -> String? {
        if result.operations == 0 { return "no call was served in \(scenario.rounds) round(s)" }
        let countsStorms = scenario.kind != .signOutRace && scenario.kind != .userSwitch
        if countsStorms, result.storms == 0 { return "no storm ran in \(scenario.rounds) round(s)" }
        if result.refreshCalls == 0 {
            return "the server saw no refresh call in \(scenario.rounds) round(s), though the first holds one in flight"
        }
        return nil
    }

    static let allocationNote =
        "counted in steady scenarios (per call) and in the scale storm (per waiting caller): in smaller storms the coordinator's own allocations while the crowd settles vary by more than a store's per-waiter cost"

    static func run(_ context: DriverContext, outcome: DriverOutcome) async -> ScenarioResult {
        var driver = RoundDriver(context, outcome: outcome)
        var result = await driver.run(memory: context.counter).finished()
        if result.allocationNote == nil, result.storeAllocationsPerWaiter == nil {
            result.allocationNote = allocationNote
        }
        return result
    }
}
