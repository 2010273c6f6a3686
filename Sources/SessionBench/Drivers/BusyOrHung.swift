import SessionMeasurement

/// Whether a silence is a busy machine's or a hung store's: the one place the tool decides it.
///
/// A store that does not answer looks, from the outside, like a machine that gives the store no
/// CPU (a CI runner, a test suite beside it, a sanitizer). Every wait that may call a store hung
/// asks here first, with the kernel's counts of the threads or processes concerned (``CPUTimes``)
/// over the window it waited:
/// - the callers of a storm or a steady loop, and a steady writer (`PatientWait`): ``crowdedOut(process:waiter:seconds:cpus:)``
///   over this process, each window, up to ``patientExtensions`` more hang timeouts;
/// - the synchronous readers (`ReaderStarvation`): ``starved(before:after:seconds:cpus:)`` over
///   the readers' threads, up to ``readerLimit`` hang timeouts of silence in all;
/// - a session process's next line (`SessionProcessLink`): ``crowdedOut(process:waiter:seconds:cpus:)``
///   over that process and this one, up to ``processWindows`` windows; and, two windows at most,
///   a peer sharing its storage (one may hold the lock its callers wait on) blocked on the disk or
///   starved, or the machine waiting on the disk;
/// - the replicas' answers to one event (`SharedStorageDriver.crowded`): the same, over every
///   surviving replica process and this one; an ordinary event's callers that gave up on a lock
///   with a timeout meanwhile are not judged for it (`SharedStorageJudge`), and are counted;
/// - a measuring process killed at its time budget (`IsolatedRun`, in the command line):
///   ``starved(before:after:seconds:cpus:)`` over that process's whole life;
/// - the cooperative pool under a late coordinator (`StarvationWatch`): ``poolStarved(probeRan:busy:spinning:)``
///   after a probe window.
///
/// A silence the machine explains is waited out up to its limit, then reported as the machine's
/// (an error that says why), never as a hang blamed on the store; one it does not explain is a
/// hang at the first deadline. Where the kernel cannot be asked (`nil` counts), nothing is
/// excused.
package enum BusyOrHung {
    /// Hang timeouts a crowded-out wait for callers is extended by, at most.
    static let patientExtensions = 4
    /// Hang timeouts of silence the synchronous readers' starvation may excuse, in all: twice the
    /// timeout, so the synchronous phase still ends inside the time budget the command line gives a
    /// measuring process, and the run says why rather than being killed.
    static let readerLimit = 2
    /// Hang-timeout windows in a row a session process's silence may be the machine's.
    static let processWindows = 12
    /// Probe windows a spinning pool that runs no probe is given before it counts as starved. (A
    /// merely busy pool runs the probe sooner or later: 10 s of chances at 0.5 s a window.)
    static let spinningChances = 20

    /// Whether, over the `seconds` from `before` to `after`, threads were starved: they wanted CPUs
    /// (runnable at the end, or waiting for one half the time or more) and were given less than a
    /// quarter of what they wanted, of the `cpus` they may use. Threads that sleep in a store want
    /// no CPU; threads that spin in it on a machine of their own are given what they want: neither
    /// is starved.
    package static func starved(before: CPUTimes, after: CPUTimes, seconds: Double, cpus: Int) -> Bool {
        guard seconds > 0 else { return false }
        let waited = Double(after.waitedNanoseconds &- before.waitedNanoseconds) / 1e9 / seconds
        let ran = Double(after.ranNanoseconds &- before.ranNanoseconds) / 1e9 / seconds
        let wanted = min(Double(max(1, cpus)), max(Double(after.runnable), waited))
        return wanted >= 0.5 && ran < 0.25 * wanted
    }

    /// Whether a wait that heard nothing for `seconds` tells nothing about the silent party
    /// (`process`): it was starved (``starved(before:after:seconds:cpus:)``), is blocked on the disk
    /// as the window ends (`diskWaiting`), or waited for a CPU a fifth of the window while others had
    /// most of the machine — busy, slowly — or the `waiter` — idle while it waits, so any wait for a
    /// CPU is its reader's or its timer's — spent a fifth of the window or more waiting for one.
    /// Either way the silence is the machine's, not the store's. `nil` figures say nothing.
    static func crowdedOut(
        process: (before: CPUTimes, after: CPUTimes)?, waiter: (before: CPUTimes, after: CPUTimes)?,
        seconds: Double, cpus: Int
    ) -> Bool {
        guard seconds > 0 else { return false }
        if let process {
            let (before, after) = process
            if after.diskWaiting > 0 || starved(before: before, after: after, seconds: seconds, cpus: cpus) {
                return true
            }
            // Running, but sharing the CPUs with others: it waited a fifth of the window or more,
            // and was given less than three quarters of the machine. (Threads spinning in a
            // store on a machine of their own are given it all.)
            let waited = Double(after.waitedNanoseconds &- before.waitedNanoseconds) / 1e9
            let ran = Double(after.ranNanoseconds &- before.ranNanoseconds) / 1e9
            if waited >= 0.2 * seconds, ran < 0.75 * Double(max(1, cpus)) * seconds { return true }
        }
        guard let waiter else { return false }
        let waited = Double(waiter.after.waitedNanoseconds &- waiter.before.waitedNanoseconds) / 1e9
        return waited >= 0.2 * seconds
    }

    /// Whether a process whose pool ran no probe over a `window` of seconds was busy rather than
    /// blocked: it ran, or waited for a CPU that a loaded machine gave to others, a fifth of the
    /// window or more.
    static func poolBusy(ranSeconds: Double, waitedSeconds: Double, window: Double) -> Bool {
        ranSeconds > 0.2 * window || waitedSeconds > 0.2 * window
    }

    /// Whether the cooperative pool counts as starved after a probe window: the probe did not run,
    /// and the process was idle (its threads all blocked) or has spun through ``spinningChances``
    /// windows without running it. A pool that ran the probe is only slow.
    static func poolStarved(probeRan: Bool, busy: Bool, spinning: Int) -> Bool {
        !probeRan && (!busy || spinning >= spinningChances)
    }
}
