import SessionContract
import SessionOracle

extension Scenario.Kind {
    /// The invariants a scenario of this kind judges, for reports that list each one (JUnit):
    /// the session invariants I1–I13, I26 and I27 in the scenarios over one store; the storage invariants
    /// where a store restarts or shares its storage; the step-up and state-stream ones in
    /// theirs. The ledger's single-flight (I1) and no-reuse (I7), and the watchdog's no-hang
    /// (I3), are judged everywhere. A report adds any invariant a run violated beyond these.
    public var judgedInvariants: [Invariant] { ScenarioFamilies.family(of: self).judgedInvariants(self) }
}

extension Scenario {
    /// What a store must declare to run this scenario (its family says), or `nil` for every store.
    public var requirement: StoreRequirement? { ScenarioFamilies.family(of: kind).requirement(kind) }

    /// Whether `store` runs this scenario: it declares what the scenario's family requires.
    public func applies(to store: StoreDescriptor) -> Bool { requirement?.isMet(by: store) ?? true }
}

extension StoreRequirement {
    /// What some family requires, in declaration order: the marks `list` gives a store.
    public static var required: [StoreRequirement] {
        let named = Set(ScenarioFamilies.all.flatMap { family in family.kinds.compactMap(family.requirement) })
        return allCases.filter(named.contains)
    }
}
