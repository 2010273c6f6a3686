/// The synchronous read path's figures (``SyncReadDriver``).
public struct SyncReadFigures: Sendable, Codable, Hashable {
    /// OS threads that called `currentToken()` (the scenario's callers, at most 256, or `--sync-threads`).
    public var threads: Int
    /// Threads that had started before the first one stopped: all of them when all ran at once.
    public var threadsAtOnce: Int = 0
    /// Calls that returned a token.
    public var operations: UInt64 = 0
    /// Calls that returned `nil` (no fresh token, or a refresh under way).
    public var misses: UInt64 = 0
    public var seconds: Double = 0
    /// Calls per second, all threads together: every call over the time from the first
    /// thread's start to the last one's stop.
    public var throughput: Double = 0
    /// Calls per second of the slowest, the median and the fastest thread, each over its own
    /// time: how fairly the store shares itself.
    public var callerSpread: ThroughputSpread?
    /// The same loop over a token in each thread's own memory, no synchronization.
    public var plainLoadThroughput: Double?
    /// The same loop over each thread's own token behind a read of the store's clock and one
    /// compare: the floor of a correct store (`nil` in results written before it was measured).
    public var clockedLoadThroughput: Double?

    public init(threads: Int) { self.threads = threads }
}
