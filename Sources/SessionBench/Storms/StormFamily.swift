import SessionContract

/// The storm scenarios: rounds of expiries, 401s, sign-outs and user switches against one store
/// (or one per account), driven by ``RoundDriver``.
enum StormFamily: ScenarioFamily {
    static let kinds: [Scenario.Kind] = [
        .expiryStorm, .rejectionStorm, .signOutRace, .userSwitch, .flakyServer, .cancellationStorm, .family,
        .scaleStorm,
    ]

    static func judgedInvariants(_ kind: Scenario.Kind) -> [Invariant] { ScenarioFamilies.sessionInvariants }

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
