import Testing

@testable import SessionBench

/// A wait past its deadline is extended only while the kernel shows this process kept from a
/// CPU; the thread that reads the kernel's counts is running as it reads them, and is never that
/// evidence. Figures are given, not read from the machine the test runs on.
@Suite("Patient waits: a busy machine or a hung store")
struct PatientWaitTests {
    /// A thread that is not the reader: a store's caller, a watchdog.
    static let other: Int32 = 1_000_001

    /// A thread's counts: `ran` and `waited` seconds so far, runnable or not.
    static func thread(_ id: Int32, ran: Double = 0, waited: Double = 0, runnable: Bool) -> CPUTimes.ThreadSample {
        CPUTimes.ThreadSample(
            id: id,
            times: CPUTimes(
                ranNanoseconds: UInt64(ran * 1e9), waitedNanoseconds: UInt64(waited * 1e9), runnable: runnable ? 1 : 0))
    }

    /// How many hang timeouts a wait that never gets its value is given, when at its `look`-th
    /// look at the kernel (from 1) the process's threads are `threads(reader, look)`, `reader`
    /// being the thread that looks.
    static func extensions(_ threads: (_ reader: Int32, _ look: Int) -> [CPUTimes.ThreadSample]) async -> Int {
        var looks = 0
        var extensions = 0
        let result: Bool? = await PatientWait.wait(
            until: .now + .milliseconds(10), hangTimeout: .milliseconds(10),
            threads: {
                looks += 1
                return threads(CPUTimes.currentThread(), looks)
            },
            extended: { _ in extensions += 1 }
        ) { deadline in
            try? await Task.sleep(until: deadline)
            return nil
        }
        #expect(result == nil)
        return extensions
    }

    @Test("the reading thread's own state is left out of the process's figures; its times stay in")
    func readerLeftOut() {
        let threads = [
            Self.thread(7, ran: 0.5, waited: 0.1, runnable: true),
            Self.thread(Self.other, ran: 1, waited: 0.2, runnable: false),
        ]
        let process = CPUTimes.summed(threads, sampler: 7)
        #expect(process.runnable == 0)
        #expect(process.ranNanoseconds == 1_500_000_000 && process.waitedNanoseconds == 300_000_000)
        // Read by another thread, the same figures count the first one as runnable.
        #expect(CPUTimes.summed(threads, sampler: 8).runnable == 1)
    }

    @Test("a store asleep in a hang on an idle machine is given no extension: the reader is no busy machine")
    func idleHang() async {
        // Only the reader runs (it is reading); the store's thread sleeps; nobody waits for a CPU.
        let given = await Self.extensions { reader, _ in
            [Self.thread(reader, runnable: true), Self.thread(Self.other, runnable: false)]
        }
        #expect(given == 0, "a hung store on an idle machine was waited for \(given) more hang timeout(s)")
    }

    @Test("a thread of the process runnable and given no CPU: the machine's, waited for to the bound")
    func starvedIsExtended() async {
        let given = await Self.extensions { reader, _ in
            [Self.thread(reader, runnable: true), Self.thread(Self.other, runnable: true)]
        }
        #expect(given == PatientWait.extensions)
    }

    @Test("a thread spinning in the store with a CPU of its own is no busy machine")
    func spinningIsNotExtended() async {
        // A hundred seconds of CPU between two looks: more than any window took.
        let given = await Self.extensions { reader, look in
            [Self.thread(reader, runnable: true), Self.thread(Self.other, ran: Double(look) * 100, runnable: true)]
        }
        #expect(given == 0)
    }
}
