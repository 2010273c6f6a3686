import SessionOracle

/// Every scenario family, and which one runs a kind.
enum ScenarioFamilies {
    static let all: [any ScenarioFamily.Type] = [
        StormFamily.self, SteadyFamily.self, StepUpFamily.self, SessionStatesFamily.self, CrashRestartFamily.self,
        SharedStorageFamily.self,
    ]

    static func family(of kind: Scenario.Kind) -> any ScenarioFamily.Type {
        guard let family = all.first(where: { $0.kinds.contains(kind) }) else {
            preconditionFailure("Internal inconsistency: no scenario family runs \(kind.rawValue)")
        }
        return family
    }
}
