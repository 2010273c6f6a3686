import CSampleClock
import Histogram
import SessionContract

/// The clock the harness times samples with: the CPU's time-stamp counter on x86 (a few
/// nanoseconds a read, against tens for `clock_gettime`), calibrated once against
/// `CLOCK_MONOTONIC`; plain `CLOCK_MONOTONIC` nanoseconds elsewhere.
///
/// Requires an invariant TSC (`constant_tsc`/`nonstop_tsc`, as on current x86 servers and
/// VMs): the counter then ticks at one rate on every core.
public struct SampleClock: Sendable {
    /// Nanoseconds per tick.
    public let nanosecondsPerTick: Double
    /// The smallest difference between two back-to-back reads, in ticks: the timer's own
    /// floor, taken out of every sample so a 5 ns call is not reported as 15.
    public let floorTicks: UInt64

    public static let shared = SampleClock()

    @inline(__always)
    public static func ticks() -> UInt64 { session_bench_ticks() }

    init() {
        if session_bench_ticks_are_cycles() != 0 {
            let clock = TokenClock.system
            let startNs = clock.now().nanoseconds, startTicks = Self.ticks()
            var nowNs = startNs
            while nowNs - startNs < 20_000_000 { nowNs = clock.now().nanoseconds }
            let ticks = Self.ticks() - startTicks
            nanosecondsPerTick = Double(nowNs - startNs) / Double(max(ticks, 1))
        } else {
            nanosecondsPerTick = 1
        }
        var floor = UInt64.max
        for _ in 0..<10_000 {
            let a = Self.ticks(), b = Self.ticks()
            floor = min(floor, b &- a)
        }
        floorTicks = floor
    }

    public func nanoseconds(ticks: UInt64) -> Double { Double(ticks) * nanosecondsPerTick }

    /// A histogram of samples in ticks, for recording without a conversion per sample.
    public func emptyTickHistogram() -> Histogram<UInt64> {
        Histogram(
            lowestDiscernibleValue: 1, highestTrackableValue: max(ticks(nanoseconds: 60e9), 1_000),
            numberOfSignificantValueDigits: .three)
    }

    /// `histogram` (in ticks) converted to nanoseconds, once, after the run.
    public func nanosecondsHistogram(_ histogram: Histogram<UInt64>) -> Histogram<UInt64> {
        var converted = LatencyRecorder.emptyHistogram()
        for bucket in histogram.recordedValues() {
            let nanoseconds = UInt64(max(Double(bucket.value) * nanosecondsPerTick, 1))
            _ = converted.record(min(nanoseconds, LatencyRecorder.highestTrackable), count: bucket.count)
        }
        return converted
    }
    public func ticks(nanoseconds: Double) -> UInt64 { UInt64(nanoseconds / nanosecondsPerTick) }
}
