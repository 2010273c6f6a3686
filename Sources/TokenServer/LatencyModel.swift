#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SessionContract

/// How long the server takes to answer a call (real time, even when stores read a manual clock).
public enum LatencyModel: Sendable, Hashable, Codable {
    /// Answers at once.
    case none
    /// Always the same.
    case fixed(Duration)
    /// Uniform between two bounds.
    case uniform(Duration, Duration)
    /// Log-normal with the given median and shape σ: mostly near the median, with the long
    /// tail real servers have.
    case logNormal(median: Duration, sigma: Double)

    /// One draw from the model.
    public func sample(using random: inout SeededRandom) -> Duration {
        switch self {
        case .none:
            return .zero
        case .fixed(let duration):
            return duration
        case .uniform(let low, let high):
            let lowNs = low.nanosecondsValue, highNs = high.nanosecondsValue
            return .nanoseconds(Int64(lowNs + (highNs - lowNs) * random.unit()))
        case .logNormal(let median, let sigma):
            // Box–Muller for one standard normal draw.
            let u1 = max(random.unit(), .leastNonzeroMagnitude), u2 = random.unit()
            let normal = (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
            return .nanoseconds(Int64(median.nanosecondsValue * exp(sigma * normal)))
        }
    }
}
