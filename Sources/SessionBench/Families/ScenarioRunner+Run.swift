import Foundation
import SessionContract
import SessionMeasurement
import SessionOracle

extension ScenarioRunner {
    /// Runs `scenario` against a fresh instance of `store`.
    public func run(_ store: StoreDescriptor, _ scenario: Scenario) async -> ScenarioResult {
        var result = ScenarioResult(store: store.name, scenario: scenario, verdict: .pass)
        result.offers = StoreOffers(store)
        do {
            try scenario.validate()
        } catch {
            result.verdict = .error
            result.failure = error.description
            return result
        }
        let oracle = Oracle(scenario: scenario.name, seed: scenario.seed)
        let counting = AllocationCounter.current
        let counter = counting.counter
        result.allocationNote = counting.reason
        result.allocationCounter = counter?.kind
        result.allocator = AllocationCounter.allocator
        result.harnessOverheadNanoseconds = HarnessOverhead.perSampleNanoseconds()
        let cpus = CPUPlacement.allowed
        result.cpus = cpus.isEmpty ? nil : CPUPlacement.text(cpus)

        let cpuBefore = ResourceUsage.cpuSeconds
        let skeleton = result
        let timeout = hangTimeout
        let handler = onStarvation
        let watch = StarvationWatch(grace: starvationGrace) { starvation in
            var hung = skeleton
            hung.verdict = .hung
            hung.violations = oracle.violations
            hung.hang = .init(
                stuckCallers: starvation.stuckCallers, ofCallers: starvation.ofCallers, operation: starvation.operation,
                waitedSeconds: timeout.secondsValue, phase: starvation.phase, detail: starvation.detail)
            if let handler {
                handler(hung)
            } else {
                FileHandle.standardError.write(
                    Data("session-bench: \(hung.store) × \(hung.scenario): hung — \(starvation.detail)\n".utf8))
            }
        }
        defer { watch.back() }
        // The drivers write their figures into the result itself.
        let outcome = DriverOutcome(result: result)
        let context = DriverContext(
            runner: self, descriptor: store, scenario: scenario, oracle: oracle, watch: watch, counter: counter)
        result = await ScenarioFamilies.family(of: scenario.kind).run(context, outcome: outcome)
        result.cpuSeconds = ResourceUsage.cpuSeconds - cpuBefore
        result.peakResidentBytes = ResourceUsage.peakResidentBytes
        result.violations = oracle.violations
        Self.decide(&result, of: scenario)
        // What the store declares it is (an unconditional 401 refresh) is expected of it.
        if let declared = Expectations.declared(by: store) {
            var marked = [result]
            declared.mark(&marked)
            result = marked[0]
        }
        return result
    }

    /// The one place a run's verdict is decided from what it found and measured: hung when
    /// callers were stuck, crashed when a driver saw the store crash a process of its own, error
    /// when the run could not be carried out, violated when an invariant broke; error again when
    /// its own figures contradict its scenario (its family says how: no restart, no refresh, no
    /// read); else pass. A run with findings is judged by them.
    static func decide(_ result: inout ScenarioResult, of scenario: Scenario) {
        if result.hang != nil {
            result.verdict = .hung
        } else if result.verdict == .crashed {
            // A driver saw the store crash a process of its own (a session process).
        } else if result.failure != nil {
            result.verdict = .error
        } else if !result.violations.isEmpty {
            result.verdict = .violated
        } else if let why = ScenarioFamilies.family(of: scenario.kind).contradiction(result, of: scenario) {
            result.verdict = .error
            result.failure = "the run did not do what \(scenario.name) does: \(why)"
        }
    }
}
