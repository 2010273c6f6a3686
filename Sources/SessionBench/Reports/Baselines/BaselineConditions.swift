import SessionMeasurement

/// Whether two runs measured the same thing on the same kind of machine, so that their figures
/// can be compared at all: the machine (processor, cores, system, CPUs the measuring process
/// ran on), how stores ran (isolated or in process, the transport), what counted allocations
/// and on which allocator, and each scenario's setup (tasks, duration or rounds, seed,
/// latency, faults…). A difference in any of them is a reason to refuse, said in words.
public enum BaselineConditions {
    /// Why `current` cannot be compared with `baseline` (empty when it can), and what differs
    /// without mattering enough to refuse (the kernel release).
    public static func check(
        baseline: ResultsReport, current: ResultsReport
    ) -> (refusals: [String], notes: [String]) {
        var refusals: [String] = []
        var notes: [String] = []
        func refuse(_ reason: String) { if !refusals.contains(reason) { refusals.append(reason) } }
        if baseline.schemaVersion != current.schemaVersion {
            refuse(
                "it was saved with results schema \(baseline.schemaVersion) and this session-bench writes "
                    + "\(current.schemaVersion)")
            return (refusals, notes)
        }
        let old = baseline.metadata
        let new = current.metadata
        if old.cores != new.cores {
            refuse("the machine differs: \(old.cores) cores in the baseline, \(new.cores) now")
        }
        switch (old.cpuModel, new.cpuModel) {
        case (let before?, let now?) where before != now:
            refuse("the machine differs: processor '\(shown(before))' in the baseline, '\(shown(now))' now")
        case (nil, _), (_, nil):
            notes.append("the processor model is unknown for one run or both; it was not compared")
        default: break
        }
        let oldSystem = old.system.split(separator: " ")
        let newSystem = new.system.split(separator: " ")
        if oldSystem.first != newSystem.first || oldSystem.last != newSystem.last {
            refuse("the machine differs: \(shown(old.system)) in the baseline, \(shown(new.system)) now")
        } else if oldSystem != newSystem {
            notes.append("the kernel differs: \(shown(old.system)) in the baseline, \(shown(new.system)) now")
        }
        if let before = old.sampleClock, let now = new.sampleClock,
            before.split(separator: " ").first != now.split(separator: " ").first
        {
            notes.append("the sample clock differs: \(shown(before)) in the baseline, \(shown(now)) now")
        }
        if let before = old.execution, let now = new.execution, before != now {
            refuse("stores ran \(shown(before)) in the baseline and \(shown(now)) now")
        }
        if let before = old.transport, let now = new.transport, before != now {
            refuse("the transport differs: \(shown(before)) in the baseline, \(shown(now)) now")
        }
        let baselineRuns = Dictionary(
            baseline.results.map { (BenchmarkKey($0), $0) }, uniquingKeysWith: { first, _ in first })
        for result in current.results {
            guard let was = baselineRuns[BenchmarkKey(result)] else { continue }
            guard let before = was.setup, let now = result.setup else {
                refuse("the baseline does not record its scenarios' setup (saved by an older session-bench)")
                continue
            }
            for name in Set(before.keys).union(now.keys).sorted() where before[name] != now[name] {
                refuse(
                    "\(shown(result.scenario)) ran with \(shown(name)) \(before[name].map(shown) ?? "unset") in the "
                        + "baseline and \(now[name].map(shown) ?? "unset") now")
            }
            if let before = was.allocator, let now = result.allocator, before != now {
                refuse("the allocator differs: \(before.rawValue) in the baseline, \(now.rawValue) now")
            }
            if let before = was.allocationCounter, let now = result.allocationCounter, before != now {
                refuse("the allocation counter differs: \(before.rawValue) in the baseline, \(now.rawValue) now")
            }
            if let before = was.cpus, let now = result.cpus, before != now {
                refuse("the measuring processes ran on CPUs \(shown(before)) in the baseline and \(shown(now)) now")
            }
        }
        if !current.results.isEmpty, !current.results.contains(where: { baselineRuns[BenchmarkKey($0)] != nil }) {
            refuse(
                "no store × scenario of this run is in the baseline (it has "
                    + Set(baseline.results.map { BenchmarkKey($0).path }).sorted().prefix(6).map(shown).joined(
                        separator: ", ") + (Set(baseline.results.map(BenchmarkKey.init)).count > 6 ? ", …" : "")
                    + ")")
        }
        return (refusals, notes)
    }

    /// Text from a baseline file, as it may be shown on one line.
    private static func shown(_ text: String) -> String { Printable.name(text) }
}
