import Foundation
import SessionMeasurement
import SessionOracle

/// A checked-in file of limits that `session-bench check` enforces.
///
/// ```json
/// {
///   "version": 1,
///   "run": { "stores": ["mutex", "lock-free-read"], "scenarios": ["steady-reads", "expiry-storm"],
///            "duration": "300ms", "rounds": 20, "seed": 1 },
///   "limits": [
///     { "metric": "refreshes_per_expiry", "store": "*", "scenario": "*", "max": 1 },
///     { "metric": "allocs_per_op", "store": "mutex", "scenario": "steady-reads", "max": 0 },
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
        /// Rounds for the scenarios named, in place of ``rounds``: `scale-storm`'s one storm of
        /// 100,000 callers gives its exact per-waiter counts in one round, where the storms that
        /// look for rare interleavings want twenty.
        public var scenarioRounds: [String: Int] = [:]
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
        /// That loop with a read of the store's clock and one compare before each token: the
        /// floor of a correct store (`sync-read` throughput).
        case clockedLoad
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

/// A thresholds file that cannot be used: names the file, the key and what is wrong.
public struct ThresholdsError: Error, Equatable, CustomStringConvertible {
    public let path: String
    public let key: String
    public let problem: String

    public var description: String { "\(path): \(key): \(problem)" }
}
