import SessionOracle
import Testing

@testable import SessionBench

/// Every kind of scenario is run by exactly one family, which judges, describes and heads its
/// reports: a kind no family claims would trap, one claimed twice would run by chance.
@Suite("Scenario families")
struct ScenarioFamilyTests {
    @Test("each kind belongs to exactly one family")
    func eachKindOneFamily() {
        for kind in Scenario.Kind.allCases {
            let claimed = ScenarioFamilies.all.filter { $0.kinds.contains(kind) }
            #expect(claimed.count == 1, "\(kind.rawValue): \(claimed.count) families")
        }
        let claimed = ScenarioFamilies.all.flatMap { family in family.kinds }
        #expect(claimed.count == Set(claimed).count, "no kind listed twice")
    }

    @Test("every preset's family judges no-hang and says what happens", arguments: ScenarioCatalog.all)
    func presetsDescribed(_ scenario: Scenario) {
        let family = ScenarioFamilies.family(of: scenario.kind)
        #expect(family.judgedInvariants(scenario.kind).contains(.noHang), "the watchdog judges every run")
        #expect(!family.summary(scenario).isEmpty)
        #expect(!family.headlineOperations(scenario.kind).isEmpty)
    }
}
