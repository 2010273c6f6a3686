import Foundation
import Synchronization
import Testing

@testable import SessionBench

/// A session process that says nothing for the hang timeout is hung only when the machine gave
/// it, and the driver waiting on it, their CPU: a silence the kernel shows to be the machine's is
/// waited out, up to a bound, and then reported as a machine too busy, never as a hung store.
@Suite("Session processes: silent or crowded out")
struct SessionProcessSilenceTests {
    /// Kernel counts after `seconds` of running `ran` CPUs' worth and waiting `waited`.
    static func times(_ seconds: Double, ran: Double, waited: Double = 0, runnable: Int = 0) -> CPUTimes {
        CPUTimes(
            ranNanoseconds: UInt64(seconds * ran * 1e9), waitedNanoseconds: UInt64(seconds * waited * 1e9),
            runnable: runnable)
    }

    @Test("a silence is the machine's when the process was starved, or the waiting driver waited for a CPU")
    func crowdedOutFigures() {
        let idle = (Self.times(0, ran: 0), Self.times(5, ran: 0))
        // Asleep in the store (a deadlock), the driver idle: the store's silence.
        #expect(!BusyOrHung.crowdedOut(process: idle, waiter: idle, seconds: 5, cpus: 2))
        // Spinning in the store with both CPUs: the store's, however many threads wait their turn.
        let spinning = (Self.times(0, ran: 0), Self.times(5, ran: 2, waited: 2, runnable: 4))
        #expect(!BusyOrHung.crowdedOut(process: spinning, waiter: idle, seconds: 5, cpus: 2))
        // Runnable and given a tenth of a CPU: the machine's.
        let starved = (Self.times(0, ran: 0), Self.times(5, ran: 0.1, waited: 0.9, runnable: 1))
        #expect(BusyOrHung.crowdedOut(process: starved, waiter: idle, seconds: 5, cpus: 2))
        // Working, one thread on a machine shared with others: given a fifth of a CPU, waiting the rest.
        let sharing = (Self.times(0, ran: 0), Self.times(5, ran: 0.3, waited: 0.7, runnable: 0))
        #expect(BusyOrHung.crowdedOut(process: sharing, waiter: idle, seconds: 5, cpus: 2))
        // A thread of the process in an uninterruptible wait as the window ends: an fsync on a busy disk.
        var onDisk = idle
        onDisk.1.diskWaiting = 1
        #expect(BusyOrHung.crowdedOut(process: onDisk, waiter: idle, seconds: 5, cpus: 2))
        // The process asleep, waiting on the driver, whose threads waited 1.5 s of 5 for a CPU.
        let crowdedDriver = (Self.times(0, ran: 0), Self.times(5, ran: 0.01, waited: 0.3))
        #expect(BusyOrHung.crowdedOut(process: idle, waiter: crowdedDriver, seconds: 5, cpus: 2))
        // The driver waited a little (a tenth of the window): not enough to excuse a silence.
        let littleWait = (Self.times(0, ran: 0), Self.times(5, ran: 0.01, waited: 0.1))
        #expect(!BusyOrHung.crowdedOut(process: idle, waiter: littleWait, seconds: 5, cpus: 2))
        // Where the kernel cannot be asked, the timeout alone decides.
        #expect(!BusyOrHung.crowdedOut(process: nil, waiter: nil, seconds: 5, cpus: 2))
        #expect(!BusyOrHung.crowdedOut(process: starved, waiter: idle, seconds: 0, cpus: 2))
    }

    /// A link to no process: lines arrive only as the test delivers them.
    static func link() -> SessionProcessLink {
        SessionProcessLink(
            pid: nil, send: { _ in }, closeInput: {}, kill: {}, wait: { .exited(0) }, errors: { [] })
    }

    /// Kernel counts that grow by `waited` seconds of waiting at each look, for the waiter.
    final class Counts: Sendable {
        let looks = Atomic(0)
        func sample(waited: Double) -> (process: CPUTimes?, waiter: CPUTimes?) {
            let look = looks.add(1, ordering: .relaxed).newValue
            return (nil, CPUTimes(waitedNanoseconds: UInt64(Double(look) * waited * 1e9)))
        }
    }

    @Test(
        "silent with the CPUs given: timed out after one window; crowded out every window: given up on after the bound")
    func silenceWaits() async {
        let quiet = Counts()
        #expect(await Self.link().next(within: .milliseconds(20), cpus: 2) { quiet.sample(waited: 0) } == .timedOut)
        #expect(quiet.looks.load(ordering: .relaxed) == 2, "one window: a look before, one after")

        // Each look finds the driver waited another 100 s for a CPU, more than any window took.
        let crowded = Counts()
        #expect(
            await Self.link().next(within: .milliseconds(20), cpus: 2) { crowded.sample(waited: 100) } == .crowdedOut)
        #expect(crowded.looks.load(ordering: .relaxed) == 2 * SessionProcessLink.crowdedWindows)
    }

    @Test(
        "a silent process beside a peer blocked on the disk or starved, or a machine waiting on the disk, is waited on a few windows more; beside idle peers it is hung at once"
    )
    func peersCrowdedOut() async {
        /// `peers` sampled, counting its looks: two per window watched.
        func silence(_ peers: @escaping (Int) -> SessionProcessLink.PeerCounts) async -> (SessionProcessLink.Event, Int)
        {
            let looks = Atomic(0)
            let quiet = Counts()
            let event = await Self.link().next(
                within: .milliseconds(20), cpus: 2,
                peers: { peers(looks.add(1, ordering: .relaxed).newValue) }
            ) { quiet.sample(waited: 0) }
            return (event, looks.load(ordering: .relaxed))
        }
        // Peers asleep (waiting on this process's lock, say), the disk quiet: the silence is this store's.
        let idle = SessionProcessLink.PeerCounts(counts: [Self.times(0, ran: 0)], ioMicroseconds: 0)
        let (alone, aloneLooks) = await silence { _ in idle }
        #expect(alone == .timedOut && aloneLooks == 2, "one window")
        // The first window and `peerWindows` more, a look before and after each; the last, its
        // excuses spent, is not looked at again.
        let excused = 2 * (1 + SessionProcessLink.peerWindows) - 1
        // A peer holding the lock in an fsync as each window ends: waited on, then hung all the same.
        var onDisk = idle
        onDisk.counts[0]?.diskWaiting = 1
        let (disk, diskLooks) = await silence { _ in onDisk }
        #expect(disk == .timedOut && diskLooks == excused)
        // The machine's tasks waited on the disk 100 s more at every look than any window took.
        let (io, ioLooks) = await silence { look in
            SessionProcessLink.PeerCounts(counts: [], ioMicroseconds: UInt64(look) * 100_000_000)
        }
        #expect(io == .timedOut && ioLooks == excused)
        // A peer runnable and given a thousandth of what it wanted over each window.
        let (starved, starvedLooks) = await silence { look in
            SessionProcessLink.PeerCounts(counts: [
                CPUTimes(
                    ranNanoseconds: UInt64(look) * 1_000_000, waitedNanoseconds: UInt64(look) * 1_000_000_000,
                    runnable: 1)
            ])
        }
        #expect(starved == .timedOut && starvedLooks == excused)
        // A peer running its share of a busy machine is not starved: no excuse.
        let (sharing, sharingLooks) = await silence { look in
            SessionProcessLink.PeerCounts(counts: [
                CPUTimes(ranNanoseconds: UInt64(look) * 15_000_000, waitedNanoseconds: UInt64(look) * 15_000_000)
            ])
        }
        #expect(sharing == .timedOut && sharingLooks == 2)
        // A line from the process during an excused window is the answer.
        let link = Self.link()
        let quiet = Counts()
        let event = await link.next(
            within: .milliseconds(20), cpus: 2,
            peers: {
                if quiet.looks.load(ordering: .relaxed) == 3 { link.deliver("late") }
                return onDisk
            }
        ) { quiet.sample(waited: 0) }
        #expect(event == .line("late"))
    }

    @Test("a line that comes while a crowded-out wait is extended is the answer")
    func lineDuringExtension() async {
        let link = Self.link()
        let crowded = Counts()
        let event = await link.next(within: .milliseconds(20), cpus: 2) {
            let counts = crowded.sample(waited: 100)
            // The third window's first look: the process speaks at last.
            if crowded.looks.load(ordering: .relaxed) == 5 { link.deliver("late") }
            return counts
        }
        #expect(event == .line("late"))
        #expect(crowded.looks.load(ordering: .relaxed) == 5, "the line was taken before a third window's wait")
    }

    @Test("a line that comes within the wait's first moments costs no look at the kernel's counts")
    func quickLineUnwatched() async {
        let link = Self.link()
        let counts = Counts()
        link.deliver("ready")
        #expect(await link.next(within: .seconds(60), cpus: 2) { counts.sample(waited: 0) } == .line("ready"))
        #expect(counts.looks.load(ordering: .relaxed) == 0, "a line already there: no look at all")
        Task { link.deliver("soon") }
        #expect(await link.next(within: .seconds(60), cpus: 2) { counts.sample(waited: 0) } == .line("soon"))
        #expect(counts.looks.load(ordering: .relaxed) <= 2, "at most one watched window, if the line came late")
        link.finish()
        #expect(await link.next(within: .seconds(60), cpus: 2) { counts.sample(waited: 0) } == .closed)
    }

    @Test("lines already there, or a closed output, are answered at once")
    func readyEvents() async {
        let link = Self.link()
        link.deliver("one")
        link.deliver("two")
        #expect(await link.next(within: .seconds(60)) == .line("one"))
        #expect(await link.next(within: .seconds(60)) == .line("two"))
        link.finish()
        #expect(await link.next(within: .seconds(60)) == .closed)
    }

    @Test("the failure of a crowded-out wait says why and what to do, and names no token")
    func crowdedOutText() {
        let text = SessionProcessLink.crowdedOut("session process 1 (reads)")
        #expect(text.hasPrefix("session process 1 (reads) was kept from a CPU"))
        #expect(text.contains("too busy") && text.contains("--hang-timeout"))
    }
}
