import Histogram
import Synchronization
import SessionContract
import SessionSync
import TokenServer

/// Callers read a long-lived token as fast as they can (closed loop) or at a fixed total
/// arrival rate (open loop).
///
/// Closed loop, the way JMH's SampleTime mode does it: throughput from batch timing, latency
/// from one call per batch of 64 timed on its own. The batch's clock read (needed for its
/// deadline) starts the sample, so a sample costs one more read and a histogram record, in
/// raw ticks; ticks become nanoseconds once, after the run. Timing costs each call well under
/// a nanosecond instead of two clock reads. Open loop times every call
/// from its intended start, so a stalled store is charged for the calls it delayed (the
/// coordinated-omission correction of wrk2).
///
/// Three loops run: the measured one over an empty store first (what the harness itself
/// costs: its allocations are taken out of the store's, its throughput is the ceiling), a bare
/// loop over the store with no timing and no checks (what the store does when nobody
/// watches), then the measured loop over the store.
struct SteadyDriver {
    let runner: ScenarioRunner
    let descriptor: StoreDescriptor
    let scenario: Scenario
    let oracle: Oracle
    let watch: StarvationWatch?

    /// Calls per batch in the closed loop; one of them is timed on its own.
    static let batch = 64
    /// How long a worker runs before it yields to the others: every caller is a task that
    /// suspends, so all of them are live at once whatever their number, even when the store
    /// itself never suspends.
    static let slice: Duration = .microseconds(50)
    /// Errors kept per worker with their timing, to be judged; the rest are only counted.
    static let keptErrors = 8
    /// Workers that keep latency samples.
    static let sampledWorkers = 64

    /// One worker's tally, merged after the run.
    struct WorkerReport: Sendable {
        var operations: UInt64 = 0
        var failures: UInt64 = 0
        var unissued: UInt64 = 0
        /// Turns given to the other callers (`Task.yield()`): each costs the harness about one
        /// allocation, taken out of the store's count.
        var yields: UInt64 = 0
        /// Latency samples, in ticks; only the first ``sampledWorkers`` workers keep them.
        var reads: Histogram<UInt64>?
        var writes: Histogram<UInt64>?
        /// When this worker began and stopped calling, in sample-clock ticks.
        var beginTicks: UInt64 = 0
        var endTicks: UInt64 = 0
        var errors: [ObservedCall] = []
        /// Samples whose end read earlier than their start: counted, not recorded.
        var clockAnomalies: UInt64 = 0

        /// Records the time from `start` to now, less the timer's own bracket, as a read or a
        /// write; a sample that ends before it starts is counted instead.
        @inline(__always)
        mutating func sample(write: Bool, from start: UInt64, bracket: UInt64) {
            guard let ticks = SampleClock.elapsed(from: start, to: SampleClock.ticks()) else {
                clockAnomalies += 1
                return
            }
            let value = ticks > bracket ? ticks &- bracket : 1
            if write { _ = writes?.record(value) } else { _ = reads?.record(value) }
        }
    }

    enum Mode { case measured, bare }

    /// What one loop produced.
    struct Loop {
        var reports: [WorkerReport]?
        var seconds: Double
        var allocations: AllocationCounter.Snapshot?
        var stuck: Int

        var throughput: Double? {
            guard let reports, seconds > 0 else { return nil }
            return Double(reports.reduce(0) { $0 + $1.operations }) / seconds
        }

        var yields: UInt64 { reports?.reduce(0) { $0 + $1.yields } ?? 0 }
    }

    func run(counter: AllocationCounter?) async -> DriverOutcome {
        var outcome = DriverOutcome()
        let clock = TokenClock.coarse
        let server = TokenServer(
            configuration: .init(
                tokenLifetime: scenario.tokenLifetime, latency: scenario.latency, faults: scenario.faults,
                seed: scenario.seed),
            clock: clock)
        server.setContext("steady reads")
        let store = descriptor.make(SessionStoreConfiguration(endpoint: server, clock: clock))
        let signInStart = TokenServer.realNanoseconds()
        do {
            try await store.signIn(Credentials(subject: Subject("steady-user")))
        } catch {
            outcome.failure = "sign-in failed before the run: \(error)"
            return outcome
        }
        let signedIn = SessionEvent(
            account: 0, kind: .signIn(slot: 0, family: server.ledger.entries.first?.family), startedNanos: signInStart,
            returnedNanos: TokenServer.realNanoseconds())
        let short = min(scenario.duration, .milliseconds(100))
        var perYield: (count: Double, bytes: Double)?
        if let counter { perYield = await Self.yieldCost(counter) }
        let empty = await loop(EmptyStore(lifetime: scenario.tokenLifetime, clock: clock), .measured, short, counter, checked: false)
        let bare = await loop(store, .bare, short, nil, checked: false)
        let measured = await loop(store, .measured, scenario.duration, counter, checked: true)
        outcome.seconds = measured.seconds
        if let total = measured.allocations, let fixed = empty.allocations {
            // The harness's cost: the empty-store loop's, plus the turns the longer measured loop
            // took beyond it (the number of turns follows time, not calls).
            let extraYields = Double(measured.yields > empty.yields ? measured.yields - empty.yields : 0)
            let harnessCount = fixed.count + UInt64(extraYields * (perYield?.count ?? 0))
            let harnessBytes = fixed.bytes + UInt64(extraYields * (perYield?.bytes ?? 0))
            outcome.allocations = .init(
                count: total.count - min(total.count, harnessCount), bytes: total.bytes - min(total.bytes, harnessBytes))
        }
        for stage in [("bare loop", bare), ("steady reads", measured)] {
            guard stage.1.reports == nil else { continue }
            outcome.hang = .init(
                stuckCallers: stage.1.stuck, ofCallers: scenario.tasks, operation: .read,
                waitedSeconds: runner.hangTimeout.secondsValue, phase: stage.0,
                detail: RoundState.refreshStatus(server: server, since: max(0, server.ledger.entries.count - 8)))
            return outcome
        }
        let reports = measured.reports ?? []
        var recorder = LatencyRecorder()
        var errors: [ObservedCall] = []
        for report in reports {
            outcome.operations += report.operations
            outcome.failedCalls += report.failures
            errors += report.errors
            if let reads = report.reads, reads.totalCount > 0 {
                recorder.add(.read, SampleClock.shared.nanosecondsHistogram(reads))
            }
            if let writes = report.writes, writes.totalCount > 0 {
                recorder.add(.rejection, SampleClock.shared.nanosecondsHistogram(writes))
            }
        }
        outcome.clockAnomalies = reports.reduce(0) { $0 + $1.clockAnomalies }
        outcome.callerSpread = ThroughputSpread(reports.map { report in
            let seconds = SampleClock.shared.nanoseconds(ticks: report.endTicks &- report.beginTicks) / 1e9
            return seconds > 0 ? Double(report.operations) / seconds : 0
        })
        if scenario.arrivalRate != nil { outcome.unissuedCalls = reports.reduce(0) { $0 + $1.unissued } }
        // Callers live at once: those that had started before the first one stopped.
        if let firstStop = reports.map(\.endTicks).min() {
            outcome.callersAtOnce = reports.count { $0.beginTicks < firstStop }
        }
        // The synchronous path, for stores that have one: the same signed-in store, read from
        // OS threads of their own.
        if let reader = store as? any SynchronousTokenReading, scenario.arrivalRate == nil {
            let driver = SyncReadDriver(scenario: scenario, oracle: oracle, hangTimeout: runner.hangTimeout)
            switch await driver.run(reader, clock: clock) {
            case .finished(let figures, let latency, let anomalies):
                outcome.syncRead = figures
                outcome.clockAnomalies += anomalies
                if latency.totalCount > 0 { recorder.add(.syncRead, latency) }
            case .stuck(let count):
                outcome.hang = .init(
                    stuckCallers: count, ofCallers: driver.threads, operation: .syncRead,
                    waitedSeconds: runner.hangTimeout.secondsValue, phase: "synchronous reads",
                    detail: "threads still inside currentToken() when the time was up")
                return outcome
            }
        }
        outcome.latencies = recorder
        outcome.refreshCalls = server.ledger.refreshCalls
        outcome.emptyStoreThroughput = empty.throughput
        outcome.bareLoopThroughput = bare.throughput
        judge(errors, server: server, events: [signedIn])
        return outcome
    }

    /// Every error of a steady run needs a cause in the ledger; the ledger is audited too.
    func judge(_ errors: [ObservedCall], server: TokenServer, events: [SessionEvent]) {
        let entries = server.ledger.entries
        var accountOfFamily: [UInt64: Int] = [:], familyOfGeneration: [UInt64: UInt64] = [:]
        for entry in entries {
            accountOfFamily[entry.family] = 0
            if let generation = entry.issuedGeneration { familyOfGeneration[generation] = entry.family }
        }
        let judge = OutcomeJudge(
            entries: entries, accountOfFamily: accountOfFamily, familyOfGeneration: familyOfGeneration, events: events)
        for error in errors.sorted(by: { $0.startedNanos < $1.startedNanos }) {
            if let finding = judge.judge(error) { oracle.report(finding) }
        }
        oracle.auditLedger(entries) { _ in true }
    }

    /// Runs `scenario.tasks` workers against `store` for `duration`.
    func loop(
        _ store: any SessionStore, _ mode: Mode, _ duration: Duration, _ counter: AllocationCounter?, checked: Bool
    ) async -> Loop {
        let tasks = scenario.tasks
        let line = StartLine(count: tasks + 1)
        let latch = CompletionLatch<WorkerReport>(expected: tasks)
        let clock = SampleClock.shared
        let durationTicks = clock.ticks(nanoseconds: Double(duration.nanosecondsClamped))
        let sliceTicks = clock.ticks(nanoseconds: Double(Self.slice.nanosecondsClamped))
        // Per-worker interval in the open loop: each worker takes an equal share of the rate.
        let interval: UInt64? = scenario.arrivalRate.map { clock.ticks(nanoseconds: Double(tasks) / $0 * 1e9) }
        let oracle = checked ? self.oracle : nil
        let writeEvery = scenario.readersPerWriter.map { $0 + 1 } ?? 0
        let shared = SharedRun()
        for worker in 0..<tasks {
            Task {
                // A histogram is a few hundred kilobytes: with a thousand callers, the first
                // ones' samples are plenty. The others still read the clock per batch.
                let samples = worker < Self.sampledWorkers
                var report = WorkerReport(
                    reads: samples ? clock.emptyTickHistogram() : nil,
                    writes: samples && writeEvery > 0 ? clock.emptyTickHistogram() : nil)
                let floor = clock.bracketTicks
                var checker = ReadChecker(worker: worker, oracle: oracle, shared: shared)
                await line.arriveAndWait()
                latch.enter()
                // One start for every worker: the first to run sets it.
                let begin = shared.begin(at: SampleClock.ticks())
                let deadline = begin + durationTicks
                report.beginTicks = SampleClock.ticks()
                var nextYield = report.beginTicks + sliceTicks
                func failed(_ error: SessionError, since t0: Int64) {
                    report.failures += 1
                    guard report.errors.count < Self.keptErrors else { return }
                    report.errors.append(
                        ObservedCall(
                            caller: worker, account: 0, kind: .read, phase: "steady reads", startedAt: TokenInstant(nanoseconds: 0),
                            startedNanos: t0, endedNanos: TokenServer.realNanoseconds(), outcome: .failure(error),
                            wasCancelled: false))
                }
                // Batches start at one call and grow while they stay well inside the time slice.
                var batch = 1
                var batchStart: UInt64 = 0
                switch (mode, interval) {
                case (.bare, _):
                    while true {
                        let now = SampleClock.ticks()
                        if batchStart != 0 { batch = Self.adapt(batch, took: now &- batchStart, slice: sliceTicks) }
                        if now >= deadline { break }
                        if now >= nextYield {
                            await Task.yield()
                            report.yields += 1
                            nextYield = SampleClock.ticks() + sliceTicks
                            batchStart = 0
                            continue
                        }
                        batchStart = now
                        for _ in 0..<batch { _ = try? await store.validToken() }
                        report.operations += UInt64(batch)
                    }
                case (.measured, nil) where writeEvery == 0:
                    while true {
                        let t0 = SampleClock.ticks()
                        if batchStart != 0 { batch = Self.adapt(batch, took: t0 &- batchStart, slice: sliceTicks) }
                        if t0 >= deadline { break }
                        if t0 >= nextYield {
                            await Task.yield()
                            report.yields += 1
                            nextYield = SampleClock.ticks() + sliceTicks
                            batchStart = 0
                            continue
                        }
                        batchStart = t0
                        let notBefore = TokenClock.coarse.now()
                        checker.startBatch()
                        let wall = oracle == nil ? 0 : TokenServer.realNanoseconds()
                        // The batch's first call is the sample, timed from the batch's own read.
                        do throws(SessionError) {
                            let token = try await store.validToken()
                            report.sample(write: false, from: t0, bracket: floor)
                            checker.check(token, notBefore: notBefore)
                            report.operations += 1
                        } catch {
                            failed(error, since: wall)
                        }
                        for _ in 1..<batch {
                            do throws(SessionError) {
                                checker.check(try await store.validToken(), notBefore: notBefore)
                                report.operations += 1
                            } catch {
                                failed(error, since: wall)
                            }
                        }
                        checker.endBatch()
                    }
                case (.measured, nil):
                    // A read/write mix: every `writeEvery`-th call reports a 401 for the token
                    // the caller holds. Every call is timed: writes are not uniform.
                    var held: AccessToken?
                    var calls = 0
                    while true {
                        let t0 = SampleClock.ticks()
                        if t0 >= deadline { break }
                        if t0 >= nextYield {
                            await Task.yield()
                            report.yields += 1
                            nextYield = SampleClock.ticks() + sliceTicks
                            continue
                        }
                        let notBefore = TokenClock.coarse.now()
                        let wall = TokenServer.realNanoseconds()
                        checker.startBatch()
                        calls += 1
                        do throws(SessionError) {
                            let isWrite = calls % writeEvery == 0
                            let token = try await (isWrite && held != nil ? store.tokenRejected(held!) : store.validToken())
                            if isWrite {
                                report.sample(write: true, from: t0, bracket: floor)
                            } else {
                                report.sample(write: false, from: t0, bracket: floor)
                            }
                            checker.check(token, notBefore: notBefore)
                            held = token
                            report.operations += 1
                        } catch {
                            failed(error, since: wall)
                        }
                        checker.endBatch()
                    }
                case (.measured, let interval?):
                    // Workers start staggered across one interval (in floating point: a slow rate
                    // over a large crowd makes interval × worker overflow 64 bits).
                    var intended = begin + UInt64(Double(interval) * Double(worker) / Double(tasks))
                    while intended < deadline {
                        await Self.wait(until: intended)
                        // Behind schedule past the deadline: what is left could not be issued.
                        if SampleClock.ticks() >= deadline { break }
                        let notBefore = TokenClock.coarse.now()
                        let wall = TokenServer.realNanoseconds()
                        checker.startBatch()
                        do throws(SessionError) {
                            let token = try await store.validToken()
                            report.sample(write: false, from: intended, bracket: floor)
                            checker.check(token, notBefore: notBefore)
                            report.operations += 1
                        } catch {
                            failed(error, since: wall)
                        }
                        checker.endBatch()
                        intended += interval
                    }
                    if intended < deadline { report.unissued = (deadline - intended + interval - 1) / interval }
                }
                report.endTicks = SampleClock.ticks()
                latch.finish(report)
            }
        }
        let before = counter?.begin()
        let start = ContinuousClock.now
        await line.arriveAndWait()
        let deadline = start + duration + runner.hangTimeout
        watch?.expectBack(by: deadline) {
            Starvation(
                phase: "steady reads", stuckCallers: tasks - latch.finishedCount, ofCallers: tasks, operation: .read,
                detail: "the harness could not run after the deadline: every thread of the cooperative pool is blocked (a lock or semaphore held across an await?)")
        }
        var reports = await latch.wait(until: deadline)
        watch?.back()
        if reports == nil, latch.finishedCount == tasks { reports = latch.partialResults }
        // The measured phase: from the workers' common start to the last one's stop.
        var seconds = (ContinuousClock.now - start).secondsValue
        if let reports, let last = reports.map(\.endTicks).max(), let begin = shared.started, last > begin {
            seconds = clock.nanoseconds(ticks: last - begin) / 1e9
        }
        var allocations: AllocationCounter.Snapshot?
        if let after = counter?.end(), let before {
            allocations = .init(count: after.count - before.count, bytes: after.bytes - before.bytes)
        }
        return Loop(reports: reports, seconds: seconds, allocations: allocations, stuck: tasks - latch.finishedCount)
    }

    /// Allocations (count, bytes) one `Task.yield()` costs, with two tasks taking turns as
    /// steady callers do.
    static func yieldCost(_ counter: AllocationCounter) async -> (count: Double, bytes: Double) {
        let turns = 5_000
        let before = counter.begin()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<2 { group.addTask { for _ in 0..<turns { await Task.yield() } } }
        }
        let after = counter.end()
        let total = Double(2 * turns)
        return (Double(after.count &- before.count) / total, Double(after.bytes &- before.bytes) / total)
    }

    /// The next batch size: halved when a batch outlasts the time slice (a slow store must not
    /// keep the other callers from starting), grown back toward ``batch`` when it is short.
    @inline(__always)
    static func adapt(_ batch: Int, took: UInt64, slice: UInt64) -> Int {
        if took > slice { return max(1, batch / 2) }
        if took < slice / 4 { return min(Self.batch, batch * 2) }
        return batch
    }

    /// Sleeps most of the way to `instant` (in sample-clock ticks), then yields.
    static func wait(until instant: UInt64) async {
        let clock = SampleClock.shared
        while true {
            let now = SampleClock.ticks()
            if now >= instant { return }
            let remaining = clock.nanoseconds(ticks: instant - now)
            if remaining > 200_000 {
                try? await Task.sleep(for: .nanoseconds(Int64(remaining) - 100_000))
            } else {
                await Task.yield()
            }
        }
    }
}

/// The cheapest possible store: one fixed token, no lock, no allocation, and no reference
/// count: its value and subject are short enough to live inside the token itself, so callers
/// on different threads share no memory they write (a shared heap string would make every
/// caller pay a contended reference count that no good store pays). The harness runs its
/// loop over it to learn its own costs.
final class EmptyStore: SynchronousTokenReading {
    private let token: AccessToken

    init(lifetime: Duration, clock: TokenClock) {
        token = AccessToken(
            value: "empty-token", subject: Subject("empty"), generation: 1, expiresAt: clock.now() + lifetime)
    }

    func currentToken() -> AccessToken? { token }
    func validToken() async throws(SessionError) -> AccessToken { token }
    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken { self.token }
    func signIn(_ credentials: Credentials) async throws(SessionError) {}
    func signOut() async {}
}
