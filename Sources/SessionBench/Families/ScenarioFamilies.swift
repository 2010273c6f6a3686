import SessionOracle

/// Every scenario family, and which one runs a kind. Their order is the order of their own CSV
/// columns and of their promises in the report's coverage block.
enum ScenarioFamilies {
    static let all: [any ScenarioFamily.Type] = [
        StormFamily.self, SteadyFamily.self, CrashRestartFamily.self, SharedStorageFamily.self, StepUpFamily.self,
        SessionStatesFamily.self, GeneratedFamily.self,
    ]

    static func family(of kind: Scenario.Kind) -> any ScenarioFamily.Type {
        guard let family = all.first(where: { $0.kinds.contains(kind) }) else {
            preconditionFailure("Internal inconsistency: no scenario family runs \(kind.rawValue)")
        }
        return family
    }
}
