/// Faults the server injects into refresh calls, drawn from the run's seeded generator.
public struct FaultModel: Sendable, Hashable, Codable {
    /// Probability that a refresh fails with a transient error before the server acts on it.
    public var transientFailureRate: Double
    /// Probability that a refresh gets no answer: the client waits ``timeoutAfter`` and sees
    /// a timeout; the server did nothing.
    public var timeoutRate: Double
    /// How long a timed-out call waits before failing.
    public var timeoutAfter: Duration
    /// Probability that the server rotates the refresh token but the response is lost: the
    /// client sees a timeout while still holding a refresh token that is now used. The next
    /// refresh with it is a reuse, which revokes the session unless a grace window covers it.
    public var lostResponseRate: Double

    public init(
        transientFailureRate: Double = 0, timeoutRate: Double = 0, timeoutAfter: Duration = .milliseconds(50),
        lostResponseRate: Double = 0
    ) {
        self.transientFailureRate = transientFailureRate
        self.timeoutRate = timeoutRate
        self.timeoutAfter = timeoutAfter
        self.lostResponseRate = lostResponseRate
    }

    /// No faults.
    public static let none = FaultModel()

    /// A fault to inject into one call, decided up front.
    public enum Fault: Sendable, Hashable {
        case transientFailure
        case timeout
        case lostResponse
        /// The server rotates the token and answers, but the access token it issues has expired by
        /// the time it arrives (a lifetime shorter than the trip, or clocks apart): the client holds
        /// a new refresh token and no usable access token.
        case expiredOnArrival
    }

    func draw(using random: inout SeededRandom) -> Fault? {
        let roll = random.unit()
        if roll < transientFailureRate { return .transientFailure }
        if roll < transientFailureRate + timeoutRate { return .timeout }
        if roll < transientFailureRate + timeoutRate + lostResponseRate { return .lostResponse }
        return nil
    }
}
