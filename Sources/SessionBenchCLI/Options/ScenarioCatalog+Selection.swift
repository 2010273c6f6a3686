import SessionBench

extension ScenarioCatalog {
    /// The presets `names` names, each once, in the order first named (every default preset
    /// when `names` is empty), changed by `overrides` and checked.
    static func selection(_ names: [String], overrides: ScenarioOverrides) throws(UsageError) -> [Scenario] {
        // A scenario named twice runs once, as a store named twice does.
        let unique = names.firstSeen()
        let presets: [Scenario]
        do {
            presets =
                unique.isEmpty ? defaults : try unique.flatMap { name throws(ScenarioError) in try resolved(name) }
        } catch {
            throw UsageError("\(error) (see 'session-bench list')")
        }
        var scenarios: [Scenario] = []
        for preset in presets {
            let scenario = overrides.applied(to: preset)
            do { try scenario.validate() } catch { throw UsageError(error.description) }
            scenarios.append(scenario)
        }
        return scenarios
    }
}
