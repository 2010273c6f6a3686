import Foundation
import SessionMeasurement
import SessionOracle

/// Everything one store × scenario run measured and found. Holds no token values or user ids.
///
/// A scenario family's own figures are one optional field here each (``persistence``, ``stepUp``,
/// ``observers``), `nil` in every other family's results, with their CSV columns in the family
/// (``ScenarioFamily/columns``).
public struct ScenarioResult: Sendable, Codable {
    /// The version of the results' layout, written in every CSV row and JSON report: bumped whenever
    /// a figure or a CSV column is added, removed, renamed or changes meaning (a family's own columns
    /// included), and the reference runs in `results/` written again (`results/reproduce`).
    public static let schemaVersion = 10

    public enum Verdict: String, Sendable, Codable {
        /// Every invariant held.
        case pass
        /// At least one invariant broke.
        case violated
        /// Calls did not complete before the watchdog's deadline.
        case hung
        /// The measuring process died (signal or abnormal exit).
        case crashed
        /// The run could not be carried out (bad setup, unreadable output).
        case error
        /// The scenario never started: the store hung or crashed the measuring process in an
        /// earlier one.
        case notRun = "not-run"
        /// Invariants broke, every one of them expected (`--expect`): not a failure.
        case known

        /// Whether the run counts as passed: every invariant held, or broke as expected. The one
        /// definition every command, gate, export and baseline asks.
        public var passes: Bool { self == .pass || self == .known }
    }

    /// A violation the expectations file (``Expectations``) names, with its reason.
    public struct Known: Sendable, Codable, Hashable {
        public let invariant: Invariant
        public let summary: String
        public let reason: String
    }

    /// Callers still inside the store when the watchdog gave up.
    public struct Hang: Sendable, Codable, Hashable {
        public let stuckCallers: Int
        public let ofCallers: Int
        public let operation: OperationKind
        public let waitedSeconds: Double
        public let phase: String
        /// What the callers were waiting on: the state of the latest refresh at the server,
        /// or why the harness itself could not run.
        public var detail: String?

        public init(
            stuckCallers: Int, ofCallers: Int, operation: OperationKind, waitedSeconds: Double, phase: String,
            detail: String? = nil
        ) {
            self.stuckCallers = stuckCallers
            self.ofCallers = ofCallers
            self.operation = operation
            self.waitedSeconds = waitedSeconds
            self.phase = phase
            self.detail = detail
        }

        /// The hang in one line, as every report says it: who was stuck, in what, how long, where.
        public var summary: String {
            "\(stuckCallers) of \(ofCallers) callers stuck in \(operation.rawValue) for over "
                + String(format: "%.1f", waitedSeconds) + "s (\(phase))"
        }
    }

    public var store: String
    public var scenario: String
    /// Where this run sits in a sweep; `nil` outside one.
    public var sweep: SweepPoint?
    /// `compare --repeats`: which pass over every store this run was, from 0; `nil` for a
    /// single pass.
    public var repeatIndex: Int?
    /// What the scenario ran with (`tasks`, `duration` or `rounds`, `seed`, latency, faults…),
    /// each as text: two runs compare only when these are equal (`Scenario.setup`).
    public var setup: [String: String]?
    public var kind: Scenario.Kind
    public var seed: UInt64
    public var tasks: Int
    public var verdict: Verdict
    public var violations: [Violation] = []
    /// Those of `violations` the expectations file names (`nil` without one, or when none is).
    public var known: [Known]?

    /// Whether every violation is one ``known`` names.
    var isAllKnown: Bool {
        let known = Set((known ?? []).map(\.invariant))
        return !violations.isEmpty && violations.allSatisfy { known.contains($0.invariant) }
    }
    /// Which lifecycle transitions the run drove, where its driver reads them.
    public var coverage: LifecycleCoverage?
    /// What the store declares it offers beyond the base contract: which promises can be judged.
    public var offers: StoreOffers?
    /// Calls the store refused on its own ('refresh failed' with no failed refresh behind it) right
    /// after sending three refreshes or more in 30 s of real time: a rate limit on real time that the
    /// rounds' compressed time trips. Not judged; `--pace` spaces the rounds so they can be.
    public var refusedByStoreLimit: Int?
    public var hang: Hang?
    /// Why the run crashed or could not run.
    public var failure: String?

    /// Calls the store served: a token, or a completed sign-in or sign-out.
    public var operations: UInt64 = 0
    /// Calls that ended in an error (cancelled ones included); never counted as served.
    public var failedCalls: UInt64 = 0
    /// Open loop: calls the schedule asked for that could not be issued before the deadline
    /// because the store fell behind the arrival rate; `nil` in a closed loop.
    public var unissuedCalls: UInt64?
    /// Steady scenarios: callers that had started calling before the first one stopped — all
    /// of them when every caller really ran at once.
    public var callersAtOnce: Int?
    /// Samples whose end read earlier than their start (a clock stepped back, or two cores
    /// out of step): counted here, never recorded or dropped silently.
    public var clockAnomalies: UInt64 = 0
    /// Steady scenarios: calls per second of the slowest, the median and the fastest caller,
    /// each over its own time (async reads).
    public var callerSpread: ThroughputSpread?
    /// Steady scenarios, stores with a synchronous read: `currentToken()` on OS threads.
    public var syncRead: SyncReadFigures?
    /// Scenarios over storage: restarts, losses by cause, what is left on disk.
    public var persistence: PersistenceFigures?
    /// `step-up`: prompts the user saw, and per burst of `tasks` concurrent clinical requests.
    public var stepUp: StepUpFigures?
    /// `session-states`: the most subscribers observed at once (the lag rows are per subscriber).
    public var observers: Int?
    /// How the store reached the server when not in process (`--transport http`), and what the
    /// transport added to each refresh call.
    public var transport: TransportFigures?
    /// The CPUs the measuring process could run on (`0-1`, `0`): pinned with `--cpus`, or all
    /// the system allowed. `nil` if the system does not say.
    public var cpus: String?
    /// Wall-clock seconds of the measured phase.
    public var seconds: Double = 0
    public var latencies: [LatencySummary] = []

    /// Refresh calls the server received.
    public var refreshCalls: Int = 0
    /// Storms run (rounds × accounts); 0 for steady scenarios.
    public var storms: Int = 0
    /// Refresh calls made by storms, for refreshes per expiry.
    public var stormRefreshCalls: Int = 0
    /// Callers that waited in storms.
    public var stormCallers: Int = 0

    /// Allocations over the measured phase, or `nil` with `allocationNote` saying why not.
    public var allocations: UInt64?
    /// Bytes of those allocations, as the counter measures bytes (see `allocationCounter`).
    public var allocatedBytes: UInt64?
    public var allocationNote: String?
    /// What counted this result's allocations; `nil` when nothing could.
    public var allocationCounter: AllocationCounterKind?
    /// The allocator that served `malloc` in the measuring process, as observed there.
    public var allocator: AllocatorKind?
    /// Storms: allocations per waiting caller made by the store (its waiter record, its
    /// continuation, its share of the one refresh), beyond what the caller's own task costs.
    public var storeAllocationsPerWaiter: Double?
    /// Storms: allocations per caller of the same waves parked on bare continuations through
    /// the same harness path: what any waiting caller costs, store or not.
    public var callerAllocationsPerWaiter: Double?

    public var cpuSeconds: Double = 0
    public var peakResidentBytes: UInt64 = 0
    /// The harness's own cost per timed sample (one sample-clock read and a histogram record).
    public var harnessOverheadNanoseconds: Double = 0
    /// Steady scenarios: calls per second of the same driver loop over an empty store, the
    /// ceiling any store's throughput is measured against.
    public var emptyStoreThroughput: Double?
    /// Scale storm: heap bytes per waiting caller that the store holds (the waiter's entry,
    /// its continuation), beyond what the caller's own task costs.
    public var storeBytesPerWaiter: Double?
    /// Scale storm: heap bytes per caller parked on a bare continuation through the same
    /// harness path (its task, mostly): what any waiting caller costs, store or not.
    public var callerBytesPerWaiter: Double?
    /// Steady scenarios: calls per second of a loop over the store with no timing and no
    /// checks; the measured throughput over this says how little the harness distorts.
    public var bareLoopThroughput: Double?

    public init(store: String, scenario: Scenario, verdict: Verdict) {
        self.store = store
        self.scenario = scenario.name
        kind = scenario.kind
        seed = scenario.seed
        tasks = scenario.tasks
        setup = scenario.setup
        self.verdict = verdict
    }

    // MARK: Derived figures

    /// Store calls per second.
    public var throughput: Double { seconds > 0 ? Double(operations) / seconds : 0 }

    /// Refresh calls per storm: 1 for a single-flight store.
    public var refreshesPerExpiry: Double? { storms > 0 ? Double(stormRefreshCalls) / Double(storms) : nil }

    /// Callers served per refresh call (the coalescing factor).
    public var waitersPerRefresh: Double? {
        stormRefreshCalls > 0 ? Double(stormCallers) / Double(stormRefreshCalls) : nil
    }

    public var allocationsPerOperation: Double? {
        guard let allocations, operations > 0 else { return nil }
        return Double(allocations) / Double(operations)
    }

    public var allocatedBytesPerOperation: Double? {
        guard let allocatedBytes, operations > 0 else { return nil }
        return Double(allocatedBytes) / Double(operations)
    }
}

/// How evenly a store served its callers: the slowest, median and fastest caller's calls
/// per second, each over its own time.
public struct ThroughputSpread: Sendable, Codable, Hashable {
    public var minimum: Double
    public var median: Double
    public var maximum: Double

    /// From each caller's calls per second; `nil` for none.
    public init?(_ rates: [Double]) {
        let sorted = rates.sorted()
        guard let first = sorted.first, let last = sorted.last else { return nil }
        minimum = first
        median = sorted[sorted.count / 2]
        maximum = last
    }
}

/// What the `step-up` scenario counts. Holds no token and no user id.
public struct StepUpFigures: Sendable, Codable, Hashable {
    /// Prompts the user saw over the run.
    public var prompts = 0
    /// Bursts of `tasks` concurrent clinical requests that needed a step-up (no fresh elevated
    /// token), and the prompts those bursts caused.
    public var bursts = 0
    public var burstPrompts = 0
    /// Elevation calls the server received.
    public var elevateCalls = 0

    public init() {}

    /// Prompts per burst of concurrent clinical requests: 1 for a store that prompts once.
    public var promptsPerBurst: Double? { bursts > 0 ? Double(burstPrompts) / Double(bursts) : nil }
}
