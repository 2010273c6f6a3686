import Foundation
import Histogram
import SessionContract
import TokenServer

/// Runs scenarios against stores, in this process, with a watchdog.
public struct ScenarioRunner: Sendable {
    /// How long a phase may wait for the store's calls before they count as hung.
    public var hangTimeout: Duration
    /// How long a coordinator lets callers settle before releasing a held refresh.
    public var settle: Duration

    /// Called, on the watchdog's thread, when a store has blocked every thread of the
    /// cooperative pool so that the harness itself cannot run: with the run's verdict, as far
    /// as it got (hung, with where callers were stuck). Nothing in this process will run
    /// again; the measuring process writes the verdict and exits. By default the verdict is
    /// written to standard error.
    public var onStarvation: (@Sendable (ScenarioResult) -> Void)?

    public init(hangTimeout: Duration = .seconds(5), settle: Duration = .milliseconds(1)) {
        self.hangTimeout = hangTimeout
        self.settle = settle
    }

    /// How long past a deadline the coordinator may be late before the pool counts as starved.
    var starvationGrace: Duration { max(.seconds(1), hangTimeout / 2) }

    static let roundAllocationNote =
        "counted in steady scenarios (per call) and in the scale storm (per waiting caller): in smaller storms the coordinator's own allocations while the crowd settles vary by more than a store's per-waiter cost"

    /// Runs `scenario` against a fresh instance of `store`.
    public func run(_ store: StoreDescriptor, _ scenario: Scenario) async -> ScenarioResult {
        var result = ScenarioResult(store: store.name, scenario: scenario, verdict: .pass)
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
        let skeleton = result, timeout = hangTimeout, handler = onStarvation
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
        let outcome: DriverOutcome
        switch scenario.kind {
        case .steadyReads:
            outcome = await SteadyDriver(runner: self, descriptor: store, scenario: scenario, oracle: oracle, watch: watch)
                .run(counter: counter)
        default:
            outcome = await RoundDriver(runner: self, descriptor: store, scenario: scenario, oracle: oracle, watch: watch)
                .run(memory: counter)
            if result.allocationNote == nil, outcome.storeAllocationsPerWaiter == nil {
                result.allocationNote = Self.roundAllocationNote
            }
        }
        result.cpuSeconds = ResourceUsage.cpuSeconds - cpuBefore
        result.peakResidentBytes = ResourceUsage.peakResidentBytes
        outcome.apply(to: &result)
        result.violations = oracle.violations
        if result.hang != nil {
            result.verdict = .hung
        } else if result.failure != nil {
            result.verdict = .error
        } else if !result.violations.isEmpty {
            result.verdict = .violated
        }
        return result
    }
}

/// What a driver hands back to the runner.
struct DriverOutcome {
    var operations: UInt64 = 0
    var failedCalls: UInt64 = 0
    var unissuedCalls: UInt64?
    var callersAtOnce: Int?
    var seconds: Double = 0
    var latencies = LatencyRecorder()
    var refreshCalls = 0
    var storms = 0
    var stormRefreshCalls = 0
    var stormCallers = 0
    var allocations: AllocationCounter.Snapshot?
    var hang: ScenarioResult.Hang?
    /// Set when the run could not be carried out.
    var failure: String?
    /// Steady scenarios: calls per second of the same loop over an empty store.
    var emptyStoreThroughput: Double?
    /// Steady scenarios: calls per second of a loop over the store with no timing or checks.
    var bareLoopThroughput: Double?
    var storeBytesPerWaiter: Double?
    var callerBytesPerWaiter: Double?
    /// Storms: allocations counted over storms, and the callers of those storms.
    var stormAllocations: UInt64 = 0
    var stormAllocationCallers = 0
    /// Storms: allocations per caller of the same waves on bare continuations.
    var callerAllocationsPerWaiter: Double?
    var clockAnomalies: UInt64 = 0
    var callerSpread: ThroughputSpread?
    var syncRead: SyncReadFigures?

    func apply(to result: inout ScenarioResult) {
        result.operations = operations
        result.failedCalls = failedCalls
        result.unissuedCalls = unissuedCalls
        result.callersAtOnce = callersAtOnce
        result.clockAnomalies = clockAnomalies
        result.syncRead = syncRead
        result.callerSpread = callerSpread
        result.seconds = seconds
        result.latencies = latencies.summaries
        result.refreshCalls = refreshCalls
        result.storms = storms
        result.stormRefreshCalls = stormRefreshCalls
        result.stormCallers = stormCallers
        result.allocations = allocations?.count
        result.allocatedBytes = allocations?.bytes
        result.hang = hang
        result.failure = failure
        result.emptyStoreThroughput = emptyStoreThroughput
        result.bareLoopThroughput = bareLoopThroughput
        result.storeBytesPerWaiter = storeBytesPerWaiter
        result.callerBytesPerWaiter = callerBytesPerWaiter
        result.callerAllocationsPerWaiter = callerAllocationsPerWaiter
        result.storeAllocationsPerWaiter = storeAllocationsPerWaiter
    }

    /// Storms: the store's allocations per waiting caller, the harness's per-caller cost taken
    /// out (never below zero: the two are measured in separate waves).
    var storeAllocationsPerWaiter: Double? {
        guard let callerAllocationsPerWaiter, stormAllocationCallers > 0 else { return nil }
        return max(0, Double(stormAllocations) / Double(stormAllocationCallers) - callerAllocationsPerWaiter)
    }
}

/// The cost of timing one sample: two clock reads and a histogram record.
enum HarnessOverhead {
    /// What taking one sample costs the steady driver beyond the clock read its batch makes
    /// anyway: one sample-clock read and a histogram record, timed over many samples of
    /// nothing. The smallest of a few tries.
    static func perSampleNanoseconds(iterations: Int = 100_000) -> Double {
        let clock = SampleClock.shared
        var histogram = clock.emptyTickHistogram()
        let floor = clock.bracketTicks
        var best = Double.infinity
        for _ in 0..<5 {
            let start = SampleClock.ticks()
            var previous = start
            for _ in 0..<iterations {
                let now = SampleClock.ticks()
                let ticks = now &- previous
                _ = histogram.record(ticks > floor ? ticks &- floor : 1)
                previous = now
            }
            best = min(best, clock.nanoseconds(ticks: SampleClock.ticks() - start) / Double(iterations))
        }
        return best
    }
}
