import SessionBench
import Testing

@Suite("Scenario overrides")
struct ScenarioOverridesTests {
    @Test("no field set leaves every preset as it is")
    func nothingSet() {
        for preset in ScenarioCatalog.all {
            #expect(ScenarioOverrides().applied(to: preset) == preset, "\(preset.name)")
        }
    }

    @Test("a smaller crowd cuts the accounts to the callers; a larger one keeps them")
    func tasksClampAccounts() throws {
        let family = try ScenarioCatalog.named("family")
        #expect(family.accounts == 4)
        let small = ScenarioOverrides(tasks: 2).applied(to: family)
        #expect(small.tasks == 2 && small.accounts == 2)
        #expect(throws: Never.self) { try small.validate() }
        let large = ScenarioOverrides(tasks: 100).applied(to: family)
        #expect(large.tasks == 100 && large.accounts == 4)
    }

    @Test("the rate paces steady scenarios only; round-based ones keep their rounds")
    func rateOnSteadyOnly() throws {
        let overrides = ScenarioOverrides(rate: 500)
        #expect(overrides.applied(to: try ScenarioCatalog.named("steady-reads")).arrivalRate == 500)
        for preset in ScenarioCatalog.all where preset.isRoundBased {
            #expect(overrides.applied(to: preset) == preset, "\(preset.name)")
        }
    }

    @Test("each field set replaces the preset's own, and only that")
    func fieldsReplace() throws {
        let storm = try ScenarioCatalog.named("expiry-storm")
        let changed = ScenarioOverrides(tasks: 8, duration: .milliseconds(20), rounds: 3, seed: 99).applied(to: storm)
        var expected = storm
        expected.tasks = 8
        expected.duration = .milliseconds(20)
        expected.rounds = 3
        expected.seed = 99
        #expect(changed == expected)
        #expect(ScenarioOverrides(seed: 7).applied(to: storm).seed == 7)
        #expect(ScenarioOverrides(seed: 7).applied(to: storm).rounds == storm.rounds)
    }
}
