import SessionMeasurement
import Testing

@testable import SessionBench

/// The one decision between a busy machine and a hung store, on figures written by hand.
@Suite("Busy or hung")
struct BusyOrHungTests {
    static func times(ran: Double, waited: Double, runnable: Int = 0, disk: Int = 0) -> CPUTimes {
        CPUTimes(
            ranNanoseconds: UInt64(ran * 1e9), waitedNanoseconds: UInt64(waited * 1e9), runnable: runnable,
            diskWaiting: disk)
    }

    @Test("threads that wanted CPUs and were given little are starved; asleep or spinning on their own CPUs, not")
    func starved() {
        let start = CPUTimes()
        // Two runnable threads over 5 s, given 0.5 s between them.
        #expect(
            BusyOrHung.starved(before: start, after: Self.times(ran: 0.5, waited: 9, runnable: 2), seconds: 5, cpus: 2))
        // Waiting half the time, given a tenth: starved, though none is runnable at the end.
        #expect(BusyOrHung.starved(before: start, after: Self.times(ran: 0.2, waited: 2.5), seconds: 5, cpus: 2))
        // Asleep in a store: wanted nothing.
        #expect(!BusyOrHung.starved(before: start, after: Self.times(ran: 0.01, waited: 0.01), seconds: 5, cpus: 2))
        // Spinning with the machine to themselves.
        #expect(
            !BusyOrHung.starved(
                before: start, after: Self.times(ran: 10, waited: 0.1, runnable: 2), seconds: 5, cpus: 2))
        // No window, no evidence.
        #expect(
            !BusyOrHung.starved(before: start, after: Self.times(ran: 0, waited: 9, runnable: 2), seconds: 0, cpus: 2))
        // What is wanted is capped at the CPUs the threads may use: 8 runnable threads on 1 CPU
        // given a fifth of it are starved; given all of it, they are not.
        #expect(
            BusyOrHung.starved(before: start, after: Self.times(ran: 1, waited: 30, runnable: 8), seconds: 5, cpus: 1)
        )
        #expect(
            !BusyOrHung.starved(before: start, after: Self.times(ran: 5, waited: 30, runnable: 8), seconds: 5, cpus: 1))
    }

    @Test("a pool that ran no probe is starved when idle, or after its spinning chances; one that ran it never")
    func pool() {
        #expect(BusyOrHung.poolBusy(ranSeconds: 0.2, waitedSeconds: 0, window: 0.5))
        #expect(BusyOrHung.poolBusy(ranSeconds: 0, waitedSeconds: 0.2, window: 0.5))
        #expect(!BusyOrHung.poolBusy(ranSeconds: 0.05, waitedSeconds: 0.05, window: 0.5))
        #expect(!BusyOrHung.poolStarved(probeRan: true, busy: false, spinning: 100))
        #expect(BusyOrHung.poolStarved(probeRan: false, busy: false, spinning: 0))
        #expect(!BusyOrHung.poolStarved(probeRan: false, busy: true, spinning: BusyOrHung.spinningChances - 1))
        #expect(BusyOrHung.poolStarved(probeRan: false, busy: true, spinning: BusyOrHung.spinningChances))
    }

    @Test("every wait that may call a store hung takes its limit from here")
    func limits() {
        #expect(PatientWait.extensions == BusyOrHung.patientExtensions)
        #expect(ReaderStarvation.limit == BusyOrHung.readerLimit)
        #expect(SessionProcessLink.crowdedWindows == BusyOrHung.processWindows)
        #expect(StarvationWatch.spinningChances == BusyOrHung.spinningChances)
    }

    @Test(
        "the machine's pressure: a wait in which its tasks waited a fifth of the window for a CPU or the disk is crowded"
    )
    func machinePressure() {
        let text = """
            some avg10=97.40 avg60=88.39 avg300=60.63 total=14260214351
            full avg10=0.00 avg60=0.00 avg300=0.00 total=0
            """
        #expect(MachinePressure.parse(text) == 14_260_214_351)
        #expect(MachinePressure.parse("full avg10=0.00 total=5") == nil)
        let before = MachinePressure(cpuMicroseconds: 1_000_000, ioMicroseconds: 500_000)
        // Over 3 s: 0.6 s of tasks waiting for a CPU is a fifth; 0.5 s is not, nor is any disk wait below 0.6 s.
        #expect(MachinePressure(cpuMicroseconds: 1_600_000, ioMicroseconds: 500_000).crowded(since: before, seconds: 3))
        #expect(
            !MachinePressure(cpuMicroseconds: 1_500_000, ioMicroseconds: 1_000_000).crowded(since: before, seconds: 3))
        #expect(
            MachinePressure(cpuMicroseconds: 1_000_000, ioMicroseconds: 1_100_000).crowded(since: before, seconds: 3))
        // No window, no evidence.
        #expect(!MachinePressure(cpuMicroseconds: 9_000_000, ioMicroseconds: 0).crowded(since: before, seconds: 0))
    }
}
