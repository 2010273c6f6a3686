import Histogram
import SessionContract
import SessionMeasurement
import SessionSync
import TokenServer

extension SteadyDriver {
    /// A worker's share of the time: every ``slice`` it gives the other callers a turn
    /// (`Task.yield()`), and between clock reads it makes a batch of calls that starts at one
    /// and grows while batches stay well inside the slice.
    ///
    /// The run ends `duration` after the last caller began: every caller is live at once however
    /// long a loaded machine takes to give each its first turn (on two busy cores, a crowd of 512
    /// took longer than a 200 ms run to start). Until every caller has begun there is no
    /// deadline; a worker looks for it when it gives the others a turn.
    struct Pacing {
        let slice: UInt64
        let duration: UInt64
        let shared: SharedRun
        private(set) var deadline = UInt64.max
        var nextYield: UInt64
        /// Calls in the next batch.
        private(set) var batch = 1
        private var batchStart: UInt64 = 0

        init(slice: UInt64, duration: UInt64, shared: SharedRun, start: UInt64) {
            self.slice = slice
            self.duration = duration
            self.shared = shared
            nextYield = start + slice
            lookForDeadline()
        }

        private mutating func lookForDeadline() {
            if deadline == .max, let last = shared.everyoneBegan { deadline = last + duration }
        }

        /// The clock read that starts the next batch, after a turn for the others when this
        /// worker's slice is used up; `nil` once the deadline has passed.
        @inline(__always)
        mutating func nextBatch() async -> UInt64? {
            while true {
                let now = SampleClock.ticks()
                if batchStart != 0 { batch = SteadyDriver.adapt(batch, took: now &- batchStart, slice: slice) }
                if now >= deadline { return nil }
                guard now >= nextYield else {
                    batchStart = now
                    return now
                }
                await Task.yield()
                lookForDeadline()
                nextYield = SampleClock.ticks() + slice
                batchStart = 0
            }
        }
    }
}
