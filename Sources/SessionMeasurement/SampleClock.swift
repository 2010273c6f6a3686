import CSampleClock
import Foundation
import Histogram
import SessionContract

/// The clock the harness times samples with: the CPU's time-stamp counter, read serialized
/// (`rdtscp; lfence`), where the CPU reports it invariant (`constant_tsc` and `nonstop_tsc`:
/// one rate on every core, in every power state), calibrated once against `CLOCK_MONOTONIC`;
/// plain `CLOCK_MONOTONIC` nanoseconds elsewhere, with the reason in every report.
public struct SampleClock: Sendable {
    /// Nanoseconds per tick.
    public let nanosecondsPerTick: Double
    /// What a bracket with nothing inside measures: the median of back-to-back reads, in
    /// ticks. It is the timer's own share of every sample, and is taken out of each one (a
    /// sample at or below it counts as one tick).
    public let bracketTicks: UInt64
    /// Which clock, e.g. `tsc (rdtscp; lfence)`.
    public let name: String
    /// Why this clock: the CPU flags that allow the counter, or what ruled it out.
    public let reason: String

    public static let shared = SampleClock()

    @inline(__always)
    public static func ticks() -> UInt64 { session_bench_ticks() }

    package init() {
        reason = String(cString: session_bench_clock_why())
        switch session_bench_clock_kind() {
        case Int32(SESSION_BENCH_CLOCK_RDTSCP): name = "tsc (rdtscp; lfence)"
        case Int32(SESSION_BENCH_CLOCK_LFENCE_RDTSC): name = "tsc (lfence; rdtsc; lfence)"
        default: name = "CLOCK_MONOTONIC"
        }
        if session_bench_ticks_are_cycles() != 0 {
            let startNs = session_bench_monotonic_ns()
            let startTicks = Self.ticks()
            var nowNs = startNs
            while nowNs - startNs < 20_000_000 { nowNs = session_bench_monotonic_ns() }
            let ticks = Self.ticks() - startTicks
            nanosecondsPerTick = Double(nowNs - startNs) / Double(max(ticks, 1))
        } else {
            nanosecondsPerTick = 1
        }
        var brackets: [UInt64] = []
        brackets.reserveCapacity(10_000)
        for _ in 0..<10_000 {
            let a = Self.ticks()
            let b = Self.ticks()
            brackets.append(b &- a)
        }
        brackets.sort()
        bracketTicks = brackets[brackets.count / 2]
    }

    /// The clock for a report: its name, its timer cost and why it was chosen.
    public var summary: String {
        "\(name), \(String(format: "%.1f", nanoseconds(ticks: bracketTicks)))ns per bracket taken out of each sample; \(reason)"
    }

    /// `end - start` for a sample, or `nil` when the end reads earlier than the start (a
    /// clock stepped back, or read on two cores out of step): counted, never recorded.
    @inline(__always)
    public static func elapsed(from start: UInt64, to end: UInt64) -> UInt64? {
        end >= start ? end &- start : nil
    }

    /// A sample of `ticks` with the timer's own `bracket` taken out, never below one tick (a
    /// histogram records no zero).
    @inline(__always)
    public static func sample(_ ticks: UInt64, less bracket: UInt64) -> UInt64 {
        ticks > bracket ? ticks &- bracket : 1
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
