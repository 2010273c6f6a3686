import CPlacement
import SessionContract

/// Tells reader threads stuck in a store from reader threads the machine gives no CPU.
///
/// The synchronous readers run at the lowest priority, so on a machine busy with other work
/// (a CI runner, a test suite beside them) they can go whole seconds without a time slice, or
/// pass a lock among themselves at the pace of the slices they get. Neither is a store that
/// never returns. Before the watcher calls the readers stuck, it asks the kernel: a thread
/// that is runnable but was given (almost) no CPU over the last half of the hang timeout is
/// waiting for the machine, not for the store, and the watcher waits on — up to
/// ``limit`` hang timeouts in all. A store that blocks (every reader asleep), or spins
/// (readers given the CPU and still not returning), is stuck at the hang timeout as before.
/// Where the kernel cannot be asked (no /proc), the watcher decides at the hang timeout alone.
struct ReaderStarvation {
    /// Below this much CPU per second, summed over the readers, runnable readers are starved:
    /// a tenth of this is enough for a correct store's call to return thousands of times.
    static let starvedShare = 0.01
    /// How many hang timeouts of silence starvation may excuse, in all.
    static let limit = 12

    enum Decision: Equatable {
        /// Not time to decide.
        case wait
        /// Readers had the CPU (or none could use it) and no call returned.
        case stuck
        /// Readers were runnable and given almost no CPU for the whole of ``limit`` timeouts.
        case starved(seconds: Double)
    }

    struct Sample {
        var runnable: Bool
        var cpuNanoseconds: UInt64
    }

    private var baseline: (at: ContinuousClock.Instant, cpu: UInt64)?

    /// The calling thread's kernel id, for ``sample(threads:)``; -1 where there is none.
    static func currentThread() -> Int32 { session_bench_thread_id() }

    /// The readers' state now: whether any is runnable, and the CPU all of them have used.
    /// `nil` where the kernel cannot say. Threads that have ended are left out.
    static func sample(threads: [Int32]) -> Sample? {
        var total = Sample(runnable: false, cpuNanoseconds: 0)
        var read = 0
        for thread in threads where thread > 0 {
            var runnable: Int32 = 0
            var cpu: UInt64 = 0
            guard session_bench_thread_activity(thread, &runnable, &cpu) == 0 else { continue }
            read += 1
            total.runnable = total.runnable || runnable != 0
            total.cpuNanoseconds &+= cpu
        }
        return read > 0 ? total : nil
    }

    /// Called by the watcher while no call has returned for `quiet`; `sample` asks the kernel.
    mutating func decide(
        quiet: Duration, patience: Duration, now: ContinuousClock.Instant, sample: () -> Sample?
    ) -> Decision {
        let window = patience / 2
        guard quiet >= window else { return .wait }
        guard let baseline else {
            guard let first = sample() else { return quiet >= patience ? .stuck : .wait }
            self.baseline = (now, first.cpuNanoseconds)
            return .wait
        }
        guard quiet >= patience, now - baseline.at >= window else { return .wait }
        guard let current = sample() else { return .stuck }
        let seconds = (now - baseline.at).secondsValue
        let share = Double(current.cpuNanoseconds &- baseline.cpu) / 1e9 / seconds
        guard current.runnable, share < Self.starvedShare else { return .stuck }
        if quiet >= patience * Self.limit { return .starved(seconds: quiet.secondsValue) }
        self.baseline = (now, current.cpuNanoseconds)
        return .wait
    }

    /// Some call returned: the next silence is judged afresh.
    mutating func reset() { baseline = nil }
}
