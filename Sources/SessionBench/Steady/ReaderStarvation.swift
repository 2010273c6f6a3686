import SessionContract

/// Tells reader threads stuck in a store from reader threads the machine gives no CPU.
///
/// The synchronous readers run at the lowest priority, so on a machine busy with other work
/// (a CI runner, a test suite beside them) they can go whole seconds without a time slice, or
/// pass a lock among themselves at the pace of the slices they get. Neither is a store that
/// never returns. Before the watcher calls the readers stuck, it asks the kernel
/// (``BusyOrHung/starved(before:after:seconds:cpus:)``): readers that waited for a CPU and were given little over the last half of
/// the hang timeout are waiting for the machine, not for the store, and the watcher waits on,
/// up to ``limit`` hang timeouts of silence in all, after which the run has no verdict (an
/// error that says why), not a hang blamed on the store. A store that blocks (its readers
/// asleep), or spins with the CPUs to itself, is stuck at the hang timeout as before. Where the
/// kernel cannot be asked, the watcher decides at the hang timeout alone.
struct ReaderStarvation {
    /// How many hang timeouts of silence starvation may excuse, in all: twice the timeout, so the
    /// synchronous phase still ends inside the time budget the command line gives a measuring
    /// process (IsolatedRun.budget), and the run says why rather than being killed.
    static let limit = BusyOrHung.readerLimit

    enum Decision: Equatable {
        /// Not time to decide.
        case wait
        /// The readers were not waiting for a CPU, and no call returned.
        case stuck
        /// The readers waited for a CPU and were given little for ``limit`` timeouts: no verdict.
        case starved(seconds: Double)
    }

    /// The CPUs the readers may use.
    let cpus: Int
    private var baseline: (at: ContinuousClock.Instant, times: CPUTimes)?

    init(cpus: Int) { self.cpus = cpus }

    /// Called by the watcher while no call has returned for `quiet`; `sample` asks the kernel.
    mutating func decide(
        quiet: Duration, patience: Duration, now: ContinuousClock.Instant, sample: () -> CPUTimes?
    ) -> Decision {
        let window = patience / 2
        guard quiet >= window else { return .wait }
        guard let baseline else {
            guard let first = sample() else { return quiet >= patience ? .stuck : .wait }
            self.baseline = (now, first)
            return .wait
        }
        guard quiet >= patience, now - baseline.at >= window else { return .wait }
        guard let current = sample() else { return .stuck }
        let seconds = (now - baseline.at).secondsValue
        guard BusyOrHung.starved(before: baseline.times, after: current, seconds: seconds, cpus: cpus) else {
            return .stuck
        }
        if quiet >= patience * Self.limit { return .starved(seconds: quiet.secondsValue) }
        self.baseline = (now, current)
        return .wait
    }

    /// Some call returned: the next silence is judged afresh.
    mutating func reset() { baseline = nil }
}
