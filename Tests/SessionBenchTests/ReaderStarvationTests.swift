import Foundation
import SessionContract
import SessionOracle
import SessionStores
import Synchronization
import Testing

@testable import SessionBench

/// The synchronous readers' watcher: a store that never returns is hung at the hang timeout,
/// whether its readers sleep in it or spin in it; readers the machine gives no CPU are waited for.
@Suite("Synchronous readers: stuck or starved", .tags(.slow), .skippedInQuickRun, .serialized, .timeLimit(.minutes(30)))
struct ReaderStarvationTests {
    static let patience = Duration.seconds(5)

    /// Runs the watcher's decisions over a silence of `seconds`, sampled every 100 ms, with
    /// `sample` saying what the kernel would say at each point; returns the first decision that
    /// is not `.wait`, and when it came.
    func silence(
        upTo seconds: Double, cpus: Int = 2, _ sample: @escaping (Double) -> CPUTimes?
    ) -> (decision: ReaderStarvation.Decision, at: Double)? {
        var watch = ReaderStarvation(cpus: cpus)
        let start = ContinuousClock.now
        for step in 0...Int(seconds * 10) {
            let t = Double(step) / 10
            let quiet = Duration.milliseconds(step * 100)
            let decision = watch.decide(quiet: quiet, patience: Self.patience, now: start + quiet) { sample(t) }
            if decision != .wait { return (decision, t) }
        }
        return nil
    }

    /// Kernel counts after `t` seconds of running `ran` CPUs' worth and waiting `waited`.
    static func times(_ t: Double, ran: Double, waited: Double = 0, runnable: Int) -> CPUTimes {
        CPUTimes(ranNanoseconds: UInt64(t * ran * 1e9), waitedNanoseconds: UInt64(t * waited * 1e9), runnable: runnable)
    }

    @Test("readers asleep in the store, or running in it with the CPUs they want, are stuck at the hang timeout")
    func stuckAtTheTimeout() throws {
        let asleep = try #require(silence(upTo: 30) { t in Self.times(t, ran: 0, runnable: 0) })
        #expect(asleep.decision == .stuck && abs(asleep.at - 5) < 0.15, "\(asleep)")
        // Four readers spinning on two CPUs: both CPUs theirs, each waiting half the time.
        let spinning = try #require(silence(upTo: 30) { t in Self.times(t, ran: 2, waited: 2, runnable: 4) })
        #expect(spinning.decision == .stuck && abs(spinning.at - 5) < 0.15, "\(spinning)")
        // One reader spinning on a machine of sixteen CPUs: one CPU is all it wants.
        let alone = try #require(silence(upTo: 30, cpus: 16) { t in Self.times(t, ran: 1, runnable: 1) })
        #expect(alone.decision == .stuck && abs(alone.at - 5) < 0.15, "\(alone)")
        // Where the kernel cannot be asked, the timeout alone decides.
        let unknown = try #require(silence(upTo: 30) { _ in nil })
        #expect(unknown.decision == .stuck && abs(unknown.at - 5) < 0.15, "\(unknown)")
    }

    @Test("runnable readers given almost no CPU are waited for, up to twice the hang timeout, then no verdict")
    func starvedIsWaitedFor() throws {
        // Runnable, 2 ms of CPU a second among them: the machine's doing, not the store's.
        for sample in [
            { (t: Double) in Self.times(t, ran: 0.002, runnable: 1) },
            { (t: Double) in Self.times(t, ran: 0, waited: 1.5, runnable: 0) },  // a lock passed one slice at a time
        ] {
            let starved = try #require(silence(upTo: 30, sample))
            guard case .starved(let seconds) = starved.decision else {
                Issue.record("starved readers were called stuck: \(starved)")
                continue
            }
            #expect(abs(seconds - 10) < 0.15 && abs(starved.at - 10) < 0.15, "\(starved)")
        }
        // Starved, then given the CPUs and still not returning: stuck at the next look.
        let thenSpinning = try #require(
            silence(upTo: 30) { t in Self.times(t < 6 ? 0 : t - 6, ran: 2, runnable: 2) })
        #expect(thenSpinning.decision == .stuck && thenSpinning.at > 6 && thenSpinning.at < 8, "\(thenSpinning)")
    }

    #if os(Linux)
    @Test("the kernel tells a thread that spins from one that sleeps")
    func kernelSample() async throws {
        let spinning = Atomic<Int32>(-1)
        let sleeping = Atomic<Int32>(-1)
        let stop = Atomic<Bool>(false)
        let gate = DispatchSemaphore(value: 0)
        Thread {
            spinning.store(CPUTimes.currentThread(), ordering: .sequentiallyConsistent)
            while !stop.load(ordering: .relaxed) {}
        }.start()
        Thread {
            sleeping.store(CPUTimes.currentThread(), ordering: .sequentiallyConsistent)
            gate.wait()
        }.start()
        defer {
            stop.store(true, ordering: .relaxed)
            gate.signal()
        }
        while spinning.load(ordering: .sequentiallyConsistent) < 0 || sleeping.load(ordering: .sequentiallyConsistent) < 0 {
            try await Task.sleep(for: .milliseconds(5))
        }
        try await Task.sleep(for: .milliseconds(100))
        let before = try #require(CPUTimes.threads([spinning.load(ordering: .relaxed)]))
        let asleep = try #require(CPUTimes.threads([sleeping.load(ordering: .relaxed)]))
        try await Task.sleep(for: .milliseconds(300))
        let after = try #require(CPUTimes.threads([spinning.load(ordering: .relaxed)]))
        let stillAsleep = try #require(CPUTimes.threads([sleeping.load(ordering: .relaxed)]))
        #expect(after.runnable == 1, "a spinning thread is on a CPU or waiting for one")
        #expect(after.ranNanoseconds > before.ranNanoseconds, "and uses CPU")
        #expect(asleep.runnable == 0 && stillAsleep.runnable == 0, "a thread waiting on a semaphore sleeps")
        #expect(stillAsleep.ranNanoseconds == asleep.ranNanoseconds)
        #expect(CPUTimes.threads([-1, 0]) == nil, "no thread, nothing to say")
        // A whole process: this one, whose calling thread is running.
        let process = try #require(CPUTimes.process(getpid()))
        #expect(process.runnable >= 1 && process.ranNanoseconds > 0)
    }
    #endif

    @Test(
        "a store whose currentToken() never returns is hung at the hang timeout, asleep or spinning",
        .disabled(if: TestEnvironment.isThreadSanitized, Comment(rawValue: TestEnvironment.heavySuiteSkipped)),
        arguments: [
        StuckReadStore.Way.sleeps, .spins,
    ])
    func stuckStoreIsHung(way: StuckReadStore.Way) async throws {
        var scenario = try ScenarioCatalog.named("steady-reads")
        scenario.tasks = 4
        scenario.duration = .milliseconds(100)
        StuckReadStore.arm(way)
        defer { StuckReadStore.release() }
        let started = ContinuousClock.now
        let result = await ScenarioRunner(hangTimeout: .seconds(1)).run(StuckReadStore.descriptor("stuck-read"), scenario)
        let seconds = (ContinuousClock.now - started).secondsValue
        // A hang timeout of 1 s, waited up to twice for starved readers: a stuck store ends the
        // run in seconds (a run that waited on it would end at the suite's time limit).
        #expect(seconds < 60, "\(seconds)s")
        if way == .spins, result.verdict == .error {
            // Spinning readers are given the CPU unless the machine is saturated; then they are
            // waited for up to twice the timeout and the run says it has no verdict. Never a pass.
            #expect(result.failure?.contains("given almost no CPU") == true, "\(result.failure ?? "")")
            return
        }
        let hang = try #require(result.hang, "\(result.verdict)")
        #expect(result.verdict == .hung)
        // Every thread that got a slice is stuck inside; on a loaded machine the lowest-priority
        // readers may not all have had one before the time was up.
        #expect(hang.operation == .syncRead && (1...4).contains(hang.stuckCallers) && hang.ofCallers == 4, "\(hang)")
        // Asleep in the store is never starvation; spinning with the CPU is not either.
        #expect(hang.detail == "threads still inside currentToken() when the time was up", "\(hang)")
    }
}

/// A correct store whose `currentToken()`, once armed, never returns until released: its
/// callers sleep on a semaphore, or spin.
final class StuckReadStore: WrappedStore, SynchronousTokenReading, @unchecked Sendable {
    enum Way: Int, Sendable { case sleeps = 1, spins = 2 }

    private static let armed = Atomic<Int>(0)
    private static let released = Atomic<Bool>(false)
    private static let gate = DispatchSemaphore(value: 0)

    static func arm(_ way: Way) {
        released.store(false, ordering: .sequentiallyConsistent)
        armed.store(way.rawValue, ordering: .sequentiallyConsistent)
    }

    static func release() {
        released.store(true, ordering: .sequentiallyConsistent)
        armed.store(0, ordering: .sequentiallyConsistent)
        for _ in 0..<64 { gate.signal() }
    }

    func currentToken() -> AccessToken? {
        switch Way(rawValue: Self.armed.load(ordering: .sequentiallyConsistent)) {
        case .sleeps?: Self.gate.wait()
        case .spins?: while !Self.released.load(ordering: .relaxed) {}
        case nil: break
        }
        return inner.currentToken()
    }
}
