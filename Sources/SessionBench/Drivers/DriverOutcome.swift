import SessionMeasurement

/// What a driver hands back to the runner: the run's result, with the driver's figures
/// written straight into it (`outcome.operations += 1` sets the result's own field, so a new
/// figure is a field of ``ScenarioResult`` and the driver that measures it, nothing between),
/// and the tallies a driver keeps until the run ends.
@dynamicMemberLookup
struct DriverOutcome {
    /// The run's result so far.
    var result: ScenarioResult
    /// Latencies by operation, summarized into the result at the end.
    var latencies = LatencyRecorder()
    /// Steady scenarios: allocations of the measured loop, the harness's own taken out.
    var allocations: AllocationCounter.Snapshot?
    /// Storms: allocations counted over storms, and the callers of those storms.
    var stormAllocations: UInt64 = 0
    var stormAllocationCallers = 0
    /// Over a transport: its name, and what it added to each refresh call (every server of the run).
    var transportName: String?
    var transportOverheads: [Int64] = []
    /// The run's storage failed it (a disk that refused a write, a database out of reach): what
    /// the store did from then on is not judged against it.
    var storageFault = false

    init(result: ScenarioResult) { self.result = result }

    subscript<Value>(dynamicMember field: WritableKeyPath<ScenarioResult, Value>) -> Value {
        get { result[keyPath: field] }
        set { result[keyPath: field] = newValue }
    }

    /// Ends the run in `error` because its storage failed, saying why (the first cause stays).
    mutating func storageFailed(_ why: String) {
        if result.failure == nil { result.failure = why }
        storageFault = true
    }

    /// The result, with the tallies turned into its figures.
    func finished() -> ScenarioResult {
        var result = self.result
        result.latencies = latencies.summaries
        result.allocations = allocations?.count
        result.allocatedBytes = allocations?.bytes
        result.storeAllocationsPerWaiter = storeAllocationsPerWaiter
        if let transportName {
            result.transport = TransportFigures(transport: transportName, overheads: transportOverheads)
        }
        return result
    }

    /// Storms: the store's allocations per waiting caller, the harness's per-caller cost taken
    /// out (never below zero: the two are measured in separate waves).
    private var storeAllocationsPerWaiter: Double? {
        guard let callerAllocationsPerWaiter = result.callerAllocationsPerWaiter, stormAllocationCallers > 0 else {
            return nil
        }
        return max(0, Double(stormAllocations) / Double(stormAllocationCallers) - callerAllocationsPerWaiter)
    }
}
