import Histogram

/// The cost of timing one sample: one sample-clock read and a histogram record.
package enum HarnessOverhead {
    /// What taking one sample costs the steady driver beyond the clock read its batch makes
    /// anyway: one sample-clock read and a histogram record, timed over many samples of
    /// nothing. The smallest of a few tries.
    package static func perSampleNanoseconds(iterations: Int = 100_000) -> Double {
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
                _ = histogram.record(SampleClock.sample(ticks, less: floor))
                previous = now
            }
            best = min(best, clock.nanoseconds(ticks: SampleClock.ticks() - start) / Double(iterations))
        }
        return best
    }
}
