import Foundation

/// A checked-in file of limits that `session-bench check` enforces.
///
/// ```json
/// {
///   "version": 1,
///   "run": { "stores": ["mutex", "lock-free-read"], "scenarios": ["steady-reads", "expiry-storm"],
///            "duration": "300ms", "rounds": 20, "seed": 1 },
///   "limits": [
///     { "metric": "refreshes_per_expiry", "store": "*", "scenario": "*", "max": 1 },
///     { "metric": "allocs_per_op", "store": "mutex", "scenario": "steady-reads", "max": 0.01 },
///     { "metric": "throughput_ops_per_s", "store": "lock-free-read", "scenario": "steady-reads",
///       "min_ratio": 0.8, "of": { "store": "mutex" } },
///     { "metric": "p50_ns", "store": "mutex", "scenario": "steady-reads", "operation": "read",
///       "max_ratio": 10, "of": { "baseline": "harness_overhead_ns" } }
///   ]
/// }
/// ```
///
/// Counts (refresh calls, allocations) are exact and take absolute `max`/`min`. Timings
/// take only `max_ratio`/`min_ratio` against another store or scenario measured in the same
/// run, or against the harness's own per-sample cost: noisy machines move every figure, but
/// figures from one run move together. Invariant violations always fail, whatever the file says.
public struct Thresholds: Sendable, Hashable {
    public struct RunPlan: Sendable, Hashable {
        public var stores: [String] = []
        public var scenarios: [String] = []
        public var duration: String?
        public var rounds: Int?
        public var tasks: Int?
        public var seed: UInt64?
        /// The allocator the measuring processes run on (`system` when the file says nothing).
        public var allocator: AllocatorKind?
        /// The counter the file's allocation limits were set with (`interposer` when the file
        /// says nothing); counts from another counter are not compared with them.
        public var allocationCounter: AllocationCounterKind?

        public init() {}
    }

    public enum Bound: Sendable, Hashable {
        case max(Double)
        case min(Double)
        case maxRatio(Double, of: Reference)
        case minRatio(Double, of: Reference)
    }

    /// What a ratio divides by.
    public enum Reference: Sendable, Hashable {
        /// The same metric of another store and/or scenario (unset parts: the same as the limit's).
        case result(store: String?, scenario: String?)
        /// The harness's own cost per timed sample.
        case harnessOverhead
        /// The driver loop over an empty store (throughput).
        case emptyStore
        /// A loop over the same store with no timing and no checks (throughput).
        case bareLoop
        /// The synchronous thread loop over a token in each thread's own memory, read with no
        /// synchronization (`sync-read` throughput).
        case plainLoad
    }

    public struct Limit: Sendable, Hashable {
        public var metric: Metric
        /// A store name or `*`.
        public var store: String
        /// A scenario name or `*`.
        public var scenario: String
        public var operation: OperationKind?
        public var bound: Bound
        /// Where it came from in the file, for messages: `limits[3]`.
        public var location: String
    }

    public var run = RunPlan()
    public var limits: [Limit] = []

    public init(run: RunPlan = RunPlan(), limits: [Limit] = []) {
        self.run = run
        self.limits = limits
    }
}

/// The figures a limit can name: the CSV's column names.
public enum Metric: String, Sendable, Hashable, CaseIterable {
    case refreshCalls = "refresh_calls"
    case refreshesPerExpiry = "refreshes_per_expiry"
    case waitersPerRefresh = "waiters_per_refresh"
    case allocsPerOp = "allocs_per_op"
    case allocBytesPerOp = "alloc_bytes_per_op"
    case storeBytesPerWaiter = "store_bytes_per_waiter"
    case storeAllocsPerWaiter = "store_allocs_per_waiter"
    case throughput = "throughput_ops_per_s"
    case p50 = "p50_ns"
    case p90 = "p90_ns"
    case p99 = "p99_ns"
    case p999 = "p999_ns"
    case max = "max_ns"
    case mean = "mean_ns"

    /// Exact counts may be bounded absolutely; timings only by ratios.
    public var isCount: Bool {
        switch self {
        case .refreshCalls, .refreshesPerExpiry, .waitersPerRefresh, .allocsPerOp, .allocBytesPerOp,
            .storeBytesPerWaiter,
            .storeAllocsPerWaiter:
            true
        default: false
        }
    }

    /// Figures an allocation counter produced: comparable only with the same counter's.
    public var isAllocationFigure: Bool {
        switch self {
        case .allocsPerOp, .allocBytesPerOp, .storeBytesPerWaiter, .storeAllocsPerWaiter: true
        default: false
        }
    }

    public var isLatency: Bool {
        switch self {
        case .p50, .p90, .p99, .p999, .max, .mean: true
        default: false
        }
    }

    /// This metric of `result` (latencies of `operation`, or of the headline operation).
    public func value(in result: ScenarioResult, operation: OperationKind?) -> Double? {
        // An operation named but not measured is not measured: never another operation's figure.
        let latency = operation.map { kind in result.latencies.first { $0.kind == kind } } ?? result.headlineLatency
        if operation == .syncRead {
            switch self {
            case .throughput: return result.syncRead.flatMap { $0.operations > 0 ? $0.throughput : nil }
            case .p50, .p90, .p99, .p999, .max, .mean: break
            default: return nil
            }
        }
        switch self {
        case .refreshCalls: return Double(result.refreshCalls)
        case .refreshesPerExpiry: return result.refreshesPerExpiry
        case .waitersPerRefresh: return result.waitersPerRefresh
        case .allocsPerOp: return result.allocationsPerOperation
        case .allocBytesPerOp: return result.allocatedBytesPerOperation
        case .storeBytesPerWaiter: return result.storeBytesPerWaiter
        case .storeAllocsPerWaiter: return result.storeAllocationsPerWaiter
        case .throughput: return result.operations > 0 ? result.throughput : nil
        case .p50: return latency.map { Double($0.p50) }
        case .p90: return latency.map { Double($0.p90) }
        case .p99: return latency.map { Double($0.p99) }
        case .p999: return latency.map { Double($0.p999) }
        case .max: return latency.map { Double($0.max) }
        case .mean: return latency?.mean
        }
    }
}

/// A thresholds file that cannot be used: names the file, the key and what is wrong.
public struct ThresholdsError: Error, Equatable, CustomStringConvertible {
    public let path: String
    public let key: String
    public let problem: String

    public var description: String { "\(path): \(key): \(problem)" }
}
