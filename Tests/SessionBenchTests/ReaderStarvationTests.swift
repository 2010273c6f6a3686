import Foundation
import SessionContract
import SessionStores
import Synchronization
import Testing

@testable import SessionBench

/// The synchronous readers' watcher: a store that never returns is hung at the hang timeout,
/// whether its readers sleep in it or spin in it; readers the machine gives no CPU are waited for.
@Suite("Synchronous readers: stuck or starved", .serialized, .timeLimit(.minutes(2)))
struct ReaderStarvationTests {
    static let patience = Duration.seconds(5)

    /// Runs the watcher's decisions over a silence of `seconds`, sampled every 100 ms, with
    /// `sample` saying what the kernel would say at each point; returns the first decision that
    /// is not `.wait`, and when it came.
    func silence(
        upTo seconds: Double, _ sample: @escaping (Double) -> ReaderStarvation.Sample?
    ) -> (decision: ReaderStarvation.Decision, at: Double)? {
        var watch = ReaderStarvation()
        let start = ContinuousClock.now
        for step in 0...Int(seconds * 10) {
            let t = Double(step) / 10
            let quiet = Duration.milliseconds(step * 100)
            let decision = watch.decide(quiet: quiet, patience: Self.patience, now: start + quiet) { sample(t) }
            if decision != .wait { return (decision, t) }
        }
        return nil
    }

    @Test("readers asleep in the store, or running in it, are stuck at the hang timeout")
    func stuckAtTheTimeout() throws {
        let asleep = try #require(silence(upTo: 70) { _ in .init(runnable: false, cpuNanoseconds: 1_000_000) })
        #expect(asleep.decision == .stuck && abs(asleep.at - 5) < 0.15, "\(asleep)")
        // Spinning: half a core's worth of CPU every second, and still no call returned.
        let spinning = try #require(silence(upTo: 70) { t in .init(runnable: true, cpuNanoseconds: UInt64(t * 5e8)) })
        #expect(spinning.decision == .stuck && abs(spinning.at - 5) < 0.15, "\(spinning)")
        // Where the kernel cannot be asked, the timeout alone decides.
        let unknown = try #require(silence(upTo: 70) { _ in nil })
        #expect(unknown.decision == .stuck && abs(unknown.at - 5) < 0.15, "\(unknown)")
    }

    @Test("runnable readers given almost no CPU are waited for, up to twelve hang timeouts")
    func starvedIsWaitedFor() throws {
        // 2 ms of CPU a second among all the readers: the machine's doing, not the store's.
        let starved = try #require(silence(upTo: 70) { t in .init(runnable: true, cpuNanoseconds: UInt64(t * 2e6)) })
        guard case .starved(let seconds) = starved.decision else {
            Issue.record("starved readers were called stuck: \(starved)")
            return
        }
        #expect(abs(seconds - 60) < 0.15 && abs(starved.at - 60) < 0.15, "\(starved)")
        // Starved, then given the CPU and still not returning: stuck at the next look.
        let thenSpinning = try #require(
            silence(upTo: 70) { t in .init(runnable: true, cpuNanoseconds: t < 20 ? 0 : UInt64((t - 20) * 5e8)) })
        #expect(thenSpinning.decision == .stuck && thenSpinning.at > 20 && thenSpinning.at < 23, "\(thenSpinning)")
    }

    #if os(Linux)
    @Test("the kernel tells a thread that spins from one that sleeps")
    func kernelSample() async throws {
        let spinning = Atomic<Int32>(-1)
        let sleeping = Atomic<Int32>(-1)
        let stop = Atomic<Bool>(false)
        let gate = DispatchSemaphore(value: 0)
        Thread {
            spinning.store(ReaderStarvation.currentThread(), ordering: .sequentiallyConsistent)
            while !stop.load(ordering: .relaxed) {}
        }.start()
        Thread {
            sleeping.store(ReaderStarvation.currentThread(), ordering: .sequentiallyConsistent)
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
        let before = try #require(ReaderStarvation.sample(threads: [spinning.load(ordering: .relaxed)]))
        let asleep = try #require(ReaderStarvation.sample(threads: [sleeping.load(ordering: .relaxed)]))
        try await Task.sleep(for: .milliseconds(300))
        let after = try #require(ReaderStarvation.sample(threads: [spinning.load(ordering: .relaxed)]))
        let stillAsleep = try #require(ReaderStarvation.sample(threads: [sleeping.load(ordering: .relaxed)]))
        #expect(after.runnable, "a spinning thread is on a CPU or waiting for one")
        #expect(after.cpuNanoseconds > before.cpuNanoseconds, "and uses CPU")
        #expect(!asleep.runnable && !stillAsleep.runnable, "a thread waiting on a semaphore sleeps")
        #expect(stillAsleep.cpuNanoseconds == asleep.cpuNanoseconds)
        #expect(ReaderStarvation.sample(threads: [-1, 0]) == nil, "no thread, nothing to say")
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
        let hang = try #require(result.hang, "\(result.verdict)")
        #expect(result.verdict == .hung)
        #expect(hang.operation == .syncRead && hang.stuckCallers == 4, "\(hang)")
        if way == .sleeps {
            // Asleep in the store is never starvation: decided at the timeout.
            #expect(hang.detail == "threads still inside currentToken() when the time was up", "\(hang)")
            #expect(seconds < 10, "\(seconds)s")
        } else {
            // Spinning readers are given the CPU unless the machine is saturated: then they are
            // waited for up to twelve timeouts, and said to be starved.
            #expect(seconds < 20, "\(seconds)s")
        }
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
