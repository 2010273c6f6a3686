/// One-line descriptions of scenarios, for `list` and reports.
public enum ScenarioText {
    public static func summary(_ scenario: Scenario) -> String {
        let what = ScenarioFamilies.family(of: scenario.kind).summary(scenario)
        let size =
            scenario.kind == .replicas
            ? "\(scenario.tasks) callers × \(scenario.replicas ?? Scenario.defaultReplicas) replicas, "
                + "\(scenario.rounds) events"
            : scenario.isRoundBased
                ? "\(scenario.tasks) callers × \(scenario.rounds) \(scenario.needsStorage ? "processes" : "rounds")"
                : "\(scenario.tasks) callers"
        return "\(what) (\(size))"
    }
}
