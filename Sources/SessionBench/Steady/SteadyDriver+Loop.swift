import Histogram
import SessionContract
import SessionMeasurement
import SessionOracle
import SessionSync
import TokenServer

/// The callers' loops: closed (batches, one call per batch timed), a read/write mix, and open
/// (each call timed from its intended start); and the bare loop with no timing at all.
extension SteadyDriver {
    /// One worker's tally, merged after the run.
    struct WorkerReport: Sendable {
        var operations: UInt64 = 0
        var failures: UInt64 = 0
        var unissued: UInt64 = 0
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
            let value = SampleClock.sample(ticks, less: bracket)
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
    }

    /// Runs `scenario.tasks` workers against `store` for `duration`; with a counter, counts
    /// the allocations made inside the workers' calls to the store (``CallerAllocations``).
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
        let allocations = counter.flatMap { CallerAllocations(callers: tasks, counter: $0) }
        let counting = allocations?.start() ?? false
        for worker in 0..<tasks {
            Task {
                // Open only around each call to the store: what the worker does between calls
                // (timing, checking, turns for the others) is never counted.
                let window = counting ? allocations?.window(worker) : nil
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
                shared.began(at: report.beginTicks, of: tasks)
                var pacing = Pacing(slice: sliceTicks, duration: durationTicks, shared: shared, start: report.beginTicks)
                func failed(_ error: SessionError, since t0: Int64) {
                    report.failures += 1
                    guard report.errors.count < Self.keptErrors else { return }
                    report.errors.append(
                        ObservedCall(
                            caller: worker, account: 0, kind: .read, phase: "steady reads",
                            startedAt: TokenInstant(nanoseconds: 0),
                            startedNanos: t0, endedNanos: TokenServer.realNanoseconds(), answer: .error(error),
                            wasCancelled: false))
                }
                /// One read timed from `start` (its own batch's clock read, or its intended start),
                /// checked and counted.
                func timedRead(from start: UInt64, notBefore: TokenInstant, since wall: Int64) async {
                    do throws(SessionError) {
                        window?.open()
                        let token = try await store.validToken()
                        window?.close()
                        report.sample(write: false, from: start, bracket: floor)
                        checker.check(token, notBefore: notBefore)
                        report.operations += 1
                    } catch {
                        window?.close()
                        failed(error, since: wall)
                    }
                }
                switch (mode, interval) {
                case (.bare, _):
                    while await pacing.nextBatch() != nil {
                        for _ in 0..<pacing.batch { _ = try? await store.validToken() }
                        report.operations += UInt64(pacing.batch)
                    }
                case (.measured, nil) where writeEvery == 0:
                    while let t0 = await pacing.nextBatch() {
                        let notBefore = TokenClock.coarse.now()
                        checker.startBatch()
                        let wall = oracle == nil ? 0 : TokenServer.realNanoseconds()
                        // The batch's first call is the sample, timed from the batch's own read.
                        await timedRead(from: t0, notBefore: notBefore, since: wall)
                        for _ in 1..<pacing.batch {
                            do throws(SessionError) {
                                window?.open()
                                let token = try await store.validToken()
                                window?.close()
                                checker.check(token, notBefore: notBefore)
                                report.operations += 1
                            } catch {
                                window?.close()
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
                    // Timed one call at a time: the pacing's batch size is not used.
                    while let t0 = await pacing.nextBatch() {
                        let notBefore = TokenClock.coarse.now()
                        let wall = TokenServer.realNanoseconds()
                        checker.startBatch()
                        calls += 1
                        do throws(SessionError) {
                            let isWrite = calls % writeEvery == 0
                            window?.open()
                            let token =
                                try await (isWrite && held != nil ? store.tokenRejected(held!) : store.validToken())
                            window?.close()
                            if isWrite {
                                report.sample(write: true, from: t0, bracket: floor)
                            } else {
                                report.sample(write: false, from: t0, bracket: floor)
                            }
                            checker.check(token, notBefore: notBefore)
                            held = token
                            report.operations += 1
                        } catch {
                            window?.close()
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
                        await timedRead(from: intended, notBefore: notBefore, since: wall)
                        checker.endBatch()
                        intended += interval
                    }
                    if intended < deadline { report.unissued = (deadline - intended + interval - 1) / interval }
                }
                report.endTicks = SampleClock.ticks()
                latch.finish(report)
            }
        }
        let start = ContinuousClock.now
        await line.arriveAndWait()
        var deadline = start + duration + runner.hangTimeout
        func expectBack() {
            watch.expectBack(by: deadline) {
                Starvation(
                    phase: "steady reads", stuckCallers: tasks - latch.finishedCount, ofCallers: tasks,
                    operation: .read,
                    detail:
                        "the harness could not run after the deadline: every thread of the cooperative pool is blocked (a lock or semaphore held across an await?)"
                )
            }
        }
        expectBack()
        // The run ends `duration` after the last caller began (see ``Pacing``), and on a loaded
        // machine the last one begins late: the wait for the results counts from then.
        if await latch.waitForEntry(until: start + runner.hangTimeout) {
            watch.back()
            deadline = max(deadline, ContinuousClock.now + duration + runner.hangTimeout)
            expectBack()
        }
        // A machine too busy to run the callers is not a store that does not return.
        var reports = await PatientWait.wait(
            until: deadline, hangTimeout: runner.hangTimeout,
            extended: {
                deadline = $0
                expectBack()
            }
        ) { await latch.wait(until: $0) }
        watch.back()
        if reports == nil, latch.finishedCount == tasks { reports = latch.partialResults }
        // The measured phase: from the workers' common start to the last one's stop.
        var seconds = (ContinuousClock.now - start).secondsValue
        if let reports, let last = reports.map(\.endTicks).max(), let begin = shared.started, last > begin {
            seconds = clock.nanoseconds(ticks: last - begin) / 1e9
        }
        let counted = counting ? allocations?.finish(everyCallerFinished: latch.finishedCount == tasks) : nil
        return Loop(reports: reports, seconds: seconds, allocations: counted, stuck: tasks - latch.finishedCount)
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
