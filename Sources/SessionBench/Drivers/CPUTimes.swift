import CPlacement
import Foundation
import SessionContract
import SessionMeasurement
import SessionOracle
import SessionSync

/// How long threads have run on a CPU, and how long they waited runnable for one, as the kernel
/// counts them (schedstat). What tells a machine too busy to run a store from a store that does
/// not return: the first leaves the store's threads waiting for a CPU, the second does not.
public struct CPUTimes: Sendable, Equatable {
    public var ranNanoseconds: UInt64
    public var waitedNanoseconds: UInt64
    /// Threads runnable when the count was taken: a thread given no CPU at all has its wait
    /// counted only once it runs, so it shows here.
    public var runnable: Int
    /// Threads in an uninterruptible wait when the count was taken: blocked on the disk (an
    /// `fsync` on a busy device), which no store's code can be doing on purpose for long.
    public var diskWaiting: Int

    public init(ranNanoseconds: UInt64 = 0, waitedNanoseconds: UInt64 = 0, runnable: Int = 0, diskWaiting: Int = 0) {
        self.ranNanoseconds = ranNanoseconds
        self.waitedNanoseconds = waitedNanoseconds
        self.runnable = runnable
        self.diskWaiting = diskWaiting
    }

    /// The calling thread's kernel id, for ``threads(_:)``; -1 where there is none.
    static func currentThread() -> Int32 { session_bench_thread_id() }

    /// The named threads of this process, summed; those that have ended are left out. `nil`
    /// where the kernel keeps no such count (no /proc, no schedstat).
    static func threads(_ ids: [Int32]) -> CPUTimes? {
        var total = CPUTimes()
        var read = 0
        for id in ids where id > 0 {
            var ran: UInt64 = 0
            var waited: UInt64 = 0
            var runnable: Int32 = 0
            var disk: Int32 = 0
            guard session_bench_thread_times(0, id, &ran, &waited, &runnable, &disk) == 0 else { continue }
            read += 1
            total.ranNanoseconds &+= ran
            total.waitedNanoseconds &+= waited
            total.runnable += Int(runnable)
            total.diskWaiting += Int(disk)
        }
        return read > 0 ? total : nil
    }

    /// One thread's counts, by its kernel id.
    struct ThreadSample: Equatable {
        var id: Int32
        var times: CPUTimes
    }

    /// Each live thread of this process (`pid` 0) or of process `pid`, with its counts; `nil`
    /// where the kernel cannot say.
    static func threadSamples(of pid: Int32 = 0) -> [ThreadSample]? {
        var ids = [Int32](repeating: 0, count: 4096)
        let count = Int(session_bench_thread_ids(pid, &ids, Int32(ids.count)))
        guard count > 0 else { return nil }
        var samples: [ThreadSample] = []
        samples.reserveCapacity(count)
        for id in ids.prefix(count) {
            var ran: UInt64 = 0
            var waited: UInt64 = 0
            var runnable: Int32 = 0
            var disk: Int32 = 0
            guard session_bench_thread_times(pid, id, &ran, &waited, &runnable, &disk) == 0 else { continue }
            samples.append(
                ThreadSample(
                    id: id,
                    times: CPUTimes(
                        ranNanoseconds: ran, waitedNanoseconds: waited, runnable: Int(runnable), diskWaiting: Int(disk))
                ))
        }
        return samples.isEmpty ? nil : samples
    }

    /// This process as `threads` show it when `sampler`, one of them, reads their counts: the
    /// times summed, and how many threads are runnable or on the disk, `sampler` left out of
    /// those. The thread that reads the counts is running as it reads them: counted, it would be
    /// a thread wanting a CPU in every sample, and a store asleep on an idle machine would look
    /// starved of one. Its times stay in the sums, so that two samples read by different threads
    /// (an `await` between them) still subtract to what every thread ran and waited in between;
    /// a wait for a CPU is a wait, whichever thread it was.
    static func summed(_ threads: [ThreadSample], sampler: Int32) -> CPUTimes {
        var total = CPUTimes()
        for thread in threads {
            total.ranNanoseconds &+= thread.times.ranNanoseconds
            total.waitedNanoseconds &+= thread.times.waitedNanoseconds
            guard thread.id != sampler else { continue }
            total.runnable += thread.times.runnable
            total.diskWaiting += thread.times.diskWaiting
        }
        return total
    }

    /// Every live thread of process `pid`, summed; `nil` where the kernel cannot say. For another
    /// process: this one's own counts are ``summed(_:sampler:)``, which leaves out the reader.
    public static func process(_ pid: Int32) -> CPUTimes? {
        var ran: UInt64 = 0
        var waited: UInt64 = 0
        var runnable: Int32 = 0
        var disk: Int32 = 0
        guard session_bench_process_times(pid, &ran, &waited, &runnable, &disk) == 0 else { return nil }
        return CPUTimes(ranNanoseconds: ran, waitedNanoseconds: waited, runnable: Int(runnable), diskWaiting: Int(disk))
    }
}

/// A wait for callers that a busy machine may slow: past its deadline, while the kernel shows
/// this process crowded out of the CPUs or the disk over the last window
/// (``BusyOrHung/crowdedOut(process:waiter:seconds:cpus:)``), it waits another hang timeout, four
/// at most, before the caller may call the store hung. The thread that reads the kernel's counts
/// is never evidence of a busy machine (``CPUTimes/summed(_:sampler:)``): a store asleep in a
/// hang on an idle machine is called hung at the first deadline.
struct PatientWait {
    static let extensions = BusyOrHung.patientExtensions

    /// Where a window of the kernel's counts starts: when, and this process's times then.
    typealias Window = (start: ContinuousClock.Instant, times: CPUTimes?)

    /// This process's threads with their counts, as the kernel lists them.
    typealias Threads = () -> [CPUTimes.ThreadSample]?

    /// This process's window from now.
    static func window(_ threads: Threads = { CPUTimes.threadSamples() }) -> Window {
        (ContinuousClock.now, sample(threads))
    }

    /// This process's counts as the calling thread reads them, its own state left out.
    static func sample(_ threads: Threads) -> CPUTimes? {
        threads().map { CPUTimes.summed($0, sampler: CPUTimes.currentThread()) }
    }

    /// `wait(deadline)` until it gives a value; `extended(newDeadline)` hears each extension
    /// (to tell a watchdog). The first window starts at `since` — when the deadline was set, for
    /// waits that share one: a wait begun just before it would judge the machine on a moment.
    /// `threads` lists this process's threads (the kernel's, unless a test gives figures).
    static func wait<T>(
        until deadline: ContinuousClock.Instant, hangTimeout: Duration, since: Window? = nil,
        threads: Threads = { CPUTimes.threadSamples() }, extended: (ContinuousClock.Instant) -> Void = { _ in },
        _ wait: (ContinuousClock.Instant) async -> T?
    ) async -> T? {
        var window = since ?? Self.window(threads)
        var result = await wait(deadline)
        var count = 0
        while result == nil, count < extensions, let before = window.times, let now = sample(threads),
            BusyOrHung.crowdedOut(
                process: (before, now), waiter: nil, seconds: (ContinuousClock.now - window.start).secondsValue,
                cpus: CPUPlacement.allowed.count)
        {
            count += 1
            window = (ContinuousClock.now, now)
            let next = ContinuousClock.now + hangTimeout
            extended(next)
            result = await wait(next)
        }
        return result
    }
}

/// How long the machine's tasks waited, in all, for a CPU and for the disk, as the kernel's
/// pressure stall information counts it (`/proc/pressure/cpu` and `io`, the `some` lines: time in
/// which at least one task waited). What tells a wait slowed by a loaded machine — a database
/// server's processes kept from the CPUs — from one the code under test made long.
struct MachinePressure: Equatable {
    var cpuMicroseconds: UInt64
    var ioMicroseconds: UInt64

    /// Now; `nil` where the kernel keeps no such count.
    static func now() -> MachinePressure? {
        guard let cpu = total(of: "/proc/pressure/cpu"), let io = total(of: "/proc/pressure/io") else { return nil }
        return MachinePressure(cpuMicroseconds: cpu, ioMicroseconds: io)
    }

    /// The `total=` of the `some` line of a pressure file.
    static func total(of path: String) -> UInt64? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        return parse(text)
    }

    static func parse(_ text: String) -> UInt64? {
        guard let some = text.split(separator: "\n").first(where: { $0.hasPrefix("some ") }),
            let total = some.split(separator: " ").first(where: { $0.hasPrefix("total=") })
        else { return nil }
        return UInt64(total.dropFirst("total=".count))
    }

    /// Whether, from `before` to this count over `seconds`, tasks of the machine waited for a CPU
    /// or for the disk a fifth of the window or more: a loaded machine, whatever the wait was for.
    func crowded(since before: MachinePressure, seconds: Double) -> Bool {
        guard seconds > 0 else { return false }
        let cpu = Double(cpuMicroseconds &- before.cpuMicroseconds) / 1e6
        let io = Double(ioMicroseconds &- before.ioMicroseconds) / 1e6
        return 5 * cpu >= seconds || 5 * io >= seconds
    }
}

extension CompletionLatch {
    /// Every caller's value, or `nil` once they count as hung: a hang timeout, extended while the
    /// kernel shows this process crowded out of the CPUs (``PatientWait``), so a loaded machine
    /// slows a run rather than failing a correct store.
    func patientValues(hangTimeout: Duration) async -> [Value]? {
        await PatientWait.wait(until: .now + hangTimeout, hangTimeout: hangTimeout) { await self.wait(until: $0) }
    }
}
