import CPlacement
import Foundation
import Histogram
import SessionContract
import SessionMeasurement
import SessionOracle
import SessionSync
import Synchronization

/// What the synchronous read path (`currentToken()`) costs, on real threads.
///
/// Each caller is its own OS thread, not a task: all of them are started, wait behind one
/// start line, and call `currentToken()` in a tight loop of batches of up to ``batch`` calls for
/// the duration (a batch is halved while it outlasts the async loop's time slice, so a slow
/// store's threads still check their deadline often, and grown back when it is short) — so "8 callers" are 8 threads contending for the store at once, however few
/// cores there are. Throughput comes from each thread's calls over its own time; one call per
/// batch, at a position drawn at random, is also timed on its own for the latency histogram
/// (the serialized sample clock; its bracket cost taken out as in the async loop). Every
/// token is checked as the async loop checks it (fresh, never older than one already seen).
///
/// The same loop also runs over a token each thread holds in its own memory, read with no
/// synchronization at all: the physical floor of this loop on this machine
/// (`plain_load_ops_per_s`), measured in the same run; and over that token behind a read of the
/// store's clock and one compare (`clocked_load_ops_per_s`): the floor of a correct store, which
/// must not hand out a token within the skew of its expiry and so reads the clock on every call.
struct SyncReadDriver {
    /// Calls per batch at most; one of them, at a random position, is timed on its own.
    static let batch = 64
    /// More threads than this are not started: a hundred busy threads per core already say
    /// what contention costs, and a crowd of 100,000 is a task scenario.
    static let maxThreads = 256

    let threads: Int
    let duration: Duration
    let tokenLifetime: Duration
    let oracle: Oracle?
    let hangTimeout: Duration

    init(scenario: Scenario, oracle: Oracle?, hangTimeout: Duration) {
        threads = scenario.syncThreads ?? min(scenario.tasks, Self.maxThreads)
        duration = scenario.duration
        tokenLifetime = scenario.tokenLifetime
        self.oracle = oracle
        self.hangTimeout = hangTimeout
    }

    /// One thread's tally.
    struct ThreadReport: Sendable {
        var operations: UInt64 = 0
        /// `currentToken()` answered `nil` (no fresh token, or a refresh under way).
        var misses: UInt64 = 0
        var samples: Histogram<UInt64>
        var clockAnomalies: UInt64 = 0
        var beginTicks: UInt64 = 0
        var endTicks: UInt64 = 0
    }

    enum Outcome {
        case finished(SyncReadFigures, latency: Histogram<UInt64>, clockAnomalies: UInt64)
        /// Threads still inside `currentToken()` when the time was up; how long the machine gave
        /// them no CPU, when that is why.
        case stuck(Int, starvedSeconds: Double?)
    }

    /// Runs the store's loop, then the plain-load loop, and puts the figures together.
    func run(_ store: any SynchronousTokenReading, clock: TokenClock) async -> Outcome {
        let reports: [ThreadReport]
        switch await loop(duration: duration, checked: true, reader: { _ in store }) {
        case .finished(let finished): reports = finished
        case .stuck(let count, let starved): return .stuck(count, starvedSeconds: starved)
        }
        let floorDuration = min(duration, .milliseconds(100))
        // Each thread's own copy of the very token the store hands out: the same strings to
        // retain and release, with nothing shared between threads and no synchronization.
        let template =
            store.currentToken()
            ?? AccessToken(
                value: "plain-load-token", subject: Subject("plain-load"), generation: 1,
                expiresAt: clock.now() + tokenLifetime)
        let plain = await loop(duration: floorDuration, checked: false) { _ in
            PlainLoad(token: template.unsharedCopy())
        }
        // The same, behind the store's own clock and one compare: what every fresh read must do
        // at least, since the contract forbids handing out a token within the skew of expiry.
        let freshUntil = (clock.now() + .seconds(3_600)).nanoseconds
        let clocked = await loop(duration: floorDuration, checked: false) { _ in
            ClockedLoad(token: template.unsharedCopy(), clock: clock, freshUntil: freshUntil)
        }
        let sampleClock = SampleClock.shared
        var latency = LatencyRecorder.emptyHistogram()
        var anomalies: UInt64 = 0
        for report in reports {
            if report.samples.totalCount > 0 { latency.add(sampleClock.nanosecondsHistogram(report.samples)) }
            anomalies += report.clockAnomalies
        }
        var figures = SyncReadFigures(threads: threads)
        figures.operations = reports.reduce(0) { $0 + $1.operations }
        figures.misses = reports.reduce(0) { $0 + $1.misses }
        let begin = reports.map(\.beginTicks).min() ?? 0
        let end = reports.map(\.endTicks).max() ?? 0
        figures.seconds = sampleClock.nanoseconds(ticks: end &- begin) / 1e9
        figures.throughput = figures.seconds > 0 ? Double(figures.operations) / figures.seconds : 0
        figures.callerSpread = ThroughputSpread(
            reports.map { report in
                let seconds = sampleClock.nanoseconds(ticks: report.endTicks &- report.beginTicks) / 1e9
                return seconds > 0 ? Double(report.operations) / seconds : 0
            })
        if let firstStop = reports.map(\.endTicks).min() {
            figures.threadsAtOnce = reports.count { $0.beginTicks < firstStop }
        }
        figures.plainLoadThroughput = Self.throughput(plain, sampleClock)
        figures.clockedLoadThroughput = Self.throughput(clocked, sampleClock)
        return .finished(figures, latency: latency, clockAnomalies: anomalies)
    }

    /// Calls per second of a floor loop, all threads together; `nil` when it did not finish.
    static func throughput(_ outcome: LoopOutcome, _ sampleClock: SampleClock) -> Double? {
        guard case .finished(let reports) = outcome else { return nil }
        let begin = reports.map(\.beginTicks).min() ?? 0
        let end = reports.map(\.endTicks).max() ?? 0
        let seconds = sampleClock.nanoseconds(ticks: end &- begin) / 1e9
        return seconds > 0 ? Double(reports.reduce(0) { $0 + $1.operations }) / seconds : nil
    }

    enum LoopOutcome {
        case finished([ThreadReport])
        /// Threads still inside `currentToken()`; how long they went without a time slice, when
        /// that is why (see ``ReaderStarvation``).
        case stuck(Int, starvedSeconds: Double?)
    }

    /// `threads` OS threads behind one start line, each calling `reader(thread)`'s
    /// `currentToken()` for `duration` from its own first call.
    func loop(
        duration: Duration, checked: Bool, reader: @escaping @Sendable (Int) -> any SynchronousTokenReading
    ) async -> LoopOutcome {
        let sampleClock = SampleClock.shared
        let durationTicks = sampleClock.ticks(nanoseconds: Double(duration.nanosecondsClamped))
        let bracket = sampleClock.bracketTicks
        let sliceTicks = sampleClock.ticks(nanoseconds: Double(SteadyDriver.slice.nanosecondsClamped))
        let startLine = ThreadStartLine(count: threads)
        let finished = Atomic<Int>(0)
        let arrived = Atomic<Int>(0)
        // Set by the watcher once the run is a hang timeout past its time: each thread stops
        // after the call it is in. A machine that hands a crowd of lowest-priority threads a
        // lock one time slice at a time would otherwise keep them at their batches for minutes.
        let overdue = Atomic<Bool>(false)
        let heartbeats = (0..<threads).map { _ in Heartbeat() }
        let shared = SharedRun()
        let reports = ReportBox()
        let oracle = checked ? self.oracle : nil
        let count = threads
        for index in 0..<count {
            let heartbeat = heartbeats[index]
            let thread = Thread {
                let store = reader(index)
                var report = ThreadReport(samples: sampleClock.emptyTickHistogram())
                var checker = ReadChecker(worker: index, oracle: oracle, shared: shared)
                var random = UInt64(truncatingIfNeeded: index &+ 1) &* 0x9E37_79B9_7F4A_7C15
                // Busy threads at the lowest priority: however many there are, the harness's
                // own threads (the watchdog, the coordinator) and everything else on the machine
                // still run. With nothing else runnable, as in a measuring process, the
                // figures are the same.
                _ = session_bench_lower_thread_priority()
                heartbeat.thread.store(CPUTimes.currentThread(), ordering: .relaxed)
                // The start line: nobody calls until every thread is running. Threads wait
                // asleep, so a crowd still being created is not slowed by those already made.
                arrived.add(1, ordering: .relaxed)
                startLine.arriveAndWait()
                // Each thread runs for the whole duration from its own first call: on few cores
                // a crowd gets its first time slices one after another, and a shared deadline
                // would end the run before the last of them had called at all.
                report.beginTicks = SampleClock.ticks()
                _ = shared.begin(at: report.beginTicks)
                let deadline = report.beginTicks &+ durationTicks
                var late = false
                var size = Self.batch
                var previousStart: UInt64?
                while !late {
                    let batchStart = SampleClock.ticks()
                    if batchStart >= deadline { break }
                    if let previousStart {
                        size = SteadyDriver.adapt(size, took: batchStart &- previousStart, slice: sliceTicks)
                    }
                    previousStart = batchStart
                    random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                    let timed = Int((random >> 33) % UInt64(size))
                    let notBefore = TokenClock.coarse.now()
                    checker.startBatch()
                    for call in 0..<size {
                        if overdue.load(ordering: .relaxed) {
                            late = true
                            break
                        }
                        let token: AccessToken?
                        if call == timed {
                            let t0 = SampleClock.ticks()
                            token = store.currentToken()
                            if let ticks = SampleClock.elapsed(from: t0, to: SampleClock.ticks()) {
                                _ = report.samples.record(SampleClock.sample(ticks, less: bracket))
                            } else {
                                report.clockAnomalies += 1
                            }
                        } else {
                            token = store.currentToken()
                        }
                        if let token {
                            checker.check(token, notBefore: notBefore)
                            report.operations += 1
                        } else {
                            report.misses += 1
                        }
                        heartbeat.record(report.operations &+ report.misses)
                    }
                    checker.endBatch()
                }
                report.endTicks = SampleClock.ticks()
                reports.add(report)
                finished.add(1, ordering: .acquiringAndReleasing)
            }
            thread.stackSize = 512 * 1024
            thread.start()
        }
        // Wait without holding a pool thread. A store that never returns leaves threads stuck:
        // stuck means no call returned for a whole hang timeout after the run's time. A busy
        // machine that gives these lowest-priority threads little CPU slows them down but does
        // not stop every one of them, so it is not taken for a hang; nor are threads still
        // coming to the start line (they have not called the store yet), unless none comes for
        // three hang timeouts; nor are threads the machine gives no CPU at all (ReaderStarvation).
        let started = ContinuousClock.now
        let quietAllowed = duration + hangTimeout + .seconds(Double(count) * 0.004)
        var progress: UInt64 = .max
        var lastProgress = started
        var starvation = ReaderStarvation(cpus: max(1, CPUPlacement.allowed.count))
        while finished.load(ordering: .acquiring) < count {
            let now = ContinuousClock.now
            let arrivals = arrived.load(ordering: .relaxed)
            let current = heartbeats.reduce(UInt64(finished.load(ordering: .acquiring) &+ arrivals)) { $0 &+ $1.calls }
            let patience = arrivals < count ? hangTimeout * 3 : hangTimeout
            if now - started > quietAllowed { overdue.store(true, ordering: .relaxed) }
            if current != progress {
                progress = current
                lastProgress = now
                starvation.reset()
            } else if now - started > quietAllowed {
                let decision = starvation.decide(quiet: now - lastProgress, patience: patience, now: now) {
                    CPUTimes.threads(heartbeats.map { $0.thread.load(ordering: .relaxed) })
                }
                switch decision {
                case .wait: break
                case .stuck: return .stuck(count - finished.load(ordering: .acquiring), starvedSeconds: nil)
                case .starved(let seconds):
                    return .stuck(count - finished.load(ordering: .acquiring), starvedSeconds: seconds)
                }
            }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return .finished(reports.all)
    }
}

/// Calls one thread has made, written by that thread alone after each call and read by the
/// watcher (a plain store, no read-modify-write: the loop's cost hardly changes), and the
/// thread's kernel id; padded so that two threads' counts never share a cache line.
private final class Heartbeat: Sendable {
    private let made = Atomic<UInt64>(0)
    let thread = Atomic<Int32>(-1)
    private let padding: (Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int) = (
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
    )

    @inline(__always) func record(_ calls: UInt64) { made.store(calls, ordering: .relaxed) }

    var calls: UInt64 { made.load(ordering: .relaxed) }
}

/// The threads' tallies, behind a lock ThreadSanitizer can see (SessionSync).
private final class ReportBox: Sendable {
    private let reports = Mutex<[SyncReadDriver.ThreadReport]>([])

    func add(_ report: SyncReadDriver.ThreadReport) { reports.withLock(visibleTo: self) { $0.append(report) } }

    var all: [SyncReadDriver.ThreadReport] { reports.withLock(visibleTo: self) { $0 } }
}
