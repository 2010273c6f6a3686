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

/// What a family brings with it: its own CSV columns, its promise in the coverage block, its notes.
@Suite("Scenario families' own pieces")
struct ScenarioFamilyPiecesTests {
    static func result(_ kind: Scenario.Kind, store: String = "s", offers: StoreOffers = []) throws -> ScenarioResult {
        let preset = try #require(ScenarioCatalog.all.first { $0.kind == kind })
        var result = ScenarioResult(store: store, scenario: preset, verdict: .pass)
        result.coverage = LifecycleCoverage()
        result.offers = offers
        return result
    }

    @Test("each family's own columns are in the CSV once, in the families' order, and empty in other families' rows")
    func columnsOwned() throws {
        let header = ResultsReport.csvColumns
        var last = -1
        for family in ScenarioFamilies.all {
            for column in family.columns {
                let at = try #require(header.firstIndex(of: column.name), "\(column.name) not in the CSV")
                #expect(header.filter { $0 == column.name }.count == 1, "\(column.name) twice")
                #expect(at > last, "\(column.name) out of the families' order")
                last = at
            }
            for kind in Scenario.Kind.allCases where !family.kinds.contains(kind) {
                let row = CSVRow(result: try Self.result(kind), latency: nil)
                for column in family.columns {
                    #expect(column.value(row).isEmpty, "\(column.name) filled in a \(kind.rawValue) row")
                }
            }
        }
        #expect(ScenarioFamilies.all.contains { !$0.columns.isEmpty }, "some family has figures of its own")
    }

    @Test("the coverage block names each family's promise: not offered, or offered and not run, with its scenario")
    func promisesOwned() throws {
        let promised = ScenarioFamilies.all.compactMap { family in family.promise.map { (family, $0) } }
        #expect(promised.count == 4)
        for (family, what) in promised {
            let kind = try #require(family.kinds.first)
            let requirement = family.requirement(kind)
            let offer = try #require(requirement?.offer, "a promise comes with a requirement")
            let steady = ResultsReport(
                results: [
                    try Self.result(.steadyReads, store: "a"), try Self.result(.steadyReads, store: "b", offers: offer),
                ],
                metadata: .current(command: "compare"))
            let lines = steady.coverageLines()
            #expect(lines.first { $0.store == "a" }?.notJudged.contains("\(what): not offered") == true)
            #expect(
                lines.first { $0.store == "b" }?.notJudged.contains(
                    "\(what): offered, not run here (--scenario \(kind.rawValue))") == true)
            let ran = ResultsReport(
                results: [try Self.result(kind, store: "b", offers: offer)], metadata: .current(command: "compare"))
            #expect(ran.coverageLines().first?.notJudged.contains { $0.hasPrefix(what + ":") } == false)
        }
    }

    @Test("a family's notes come only when its kinds ran")
    func notesOwned() {
        for family in ScenarioFamilies.all {
            #expect(family.notes(ran: []).isEmpty)
        }
        let storage = CrashRestartFamily.notes(ran: [.crashRestart]) + SharedStorageFamily.notes(ran: [.replicas])
        #expect(storage.count == 2)
        #expect(SharedStorageFamily.notes(ran: [.crashRestart]).isEmpty)
    }
}
