import SessionOracle

extension Scenario.Kind {
    /// The invariants a scenario of this kind judges, for reports that list each one (JUnit):
    /// the session invariants I1–I13, I26 and I27 in the scenarios over one store; the storage invariants
    /// where a store restarts or shares its storage; the step-up and state-stream ones in
    /// theirs. The ledger's single-flight (I1) and no-reuse (I7), and the watchdog's no-hang
    /// (I3), are judged everywhere. A report adds any invariant a run violated beyond these.
    public var judgedInvariants: [Invariant] { ScenarioFamilies.family(of: self).judgedInvariants(self) }
}
