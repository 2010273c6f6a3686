import Histogram
import SessionContract
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

    /// Calls per batch in the closed loop; one of them is timed on its own.
    static let batch = 64

    /// One worker's tally, merged after the run.
    struct WorkerReport: Sendable {
        var operations: UInt64 = 0
        var failures: UInt64 = 0
        var reads: Histogram<UInt64>
        var writes: Histogram<UInt64>
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

    func run(counter: AllocationCounter?) async -> DriverOutcome {
        var outcome = DriverOutcome()
        let clock = TokenClock.coarse
        let server = TokenServer(
            configuration: .init(
                tokenLifetime: scenario.tokenLifetime, latency: scenario.latency, faults: scenario.faults,
                seed: scenario.seed),
            clock: clock)
        let store = descriptor.make(SessionStoreConfiguration(endpoint: server, clock: clock))
        do {
            try await store.signIn(Credentials(subject: Subject("steady-user")))
        } catch {
            outcome.failure = "sign-in failed before the run: \(error)"
            return outcome
        }
        let short = min(scenario.duration, .milliseconds(100))
        let empty = await loop(EmptyStore(lifetime: scenario.tokenLifetime, clock: clock), .measured, short, counter, checked: false)
        let bare = await loop(store, .bare, short, nil, checked: false)
        let measured = await loop(store, .measured, scenario.duration, counter, checked: true)
        outcome.seconds = measured.seconds
        if let total = measured.allocations, let fixed = empty.allocations {
            outcome.allocations = .init(
                count: total.count - min(total.count, fixed.count), bytes: total.bytes - min(total.bytes, fixed.bytes))
        }
        guard let reports = measured.reports else {
            outcome.hang = .init(
                stuckCallers: measured.stuck, ofCallers: scenario.tasks, operation: .read,
                waitedSeconds: runner.hangTimeout.seconds, phase: "steady reads")
            return outcome
        }
        var recorder = LatencyRecorder()
        for report in reports {
            outcome.operations += report.operations
            recorder.add(.read, SampleClock.shared.nanosecondsHistogram(report.reads))
            if report.writes.totalCount > 0 {
                recorder.add(.rejection, SampleClock.shared.nanosecondsHistogram(report.writes))
            }
        }
        outcome.latencies = recorder
        outcome.refreshCalls = server.ledger.refreshCalls
        outcome.emptyStoreThroughput = empty.throughput
        outcome.bareLoopThroughput = bare.throughput
        return outcome
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
        // Per-worker interval in the open loop: each worker takes an equal share of the rate.
        let interval: UInt64? = scenario.arrivalRate.map { clock.ticks(nanoseconds: Double(tasks) / $0 * 1e9) }
        let oracle = checked ? self.oracle : nil
        let writeEvery = scenario.readersPerWriter.map { $0 + 1 } ?? 0
        for worker in 0..<tasks {
            Task {
                var report = WorkerReport(reads: clock.emptyTickHistogram(), writes: clock.emptyTickHistogram())
                let floor = clock.floorTicks
                var checker = ReadChecker(worker: worker, oracle: oracle)
                await line.arriveAndWait()
                latch.enter()
                let begin = SampleClock.ticks()
                let deadline = begin + durationTicks
                switch (mode, interval) {
                case (.bare, _):
                    while SampleClock.ticks() < deadline {
                        for _ in 0..<Self.batch { _ = try? await store.validToken() }
                        report.operations += UInt64(Self.batch)
                    }
                case (.measured, nil) where writeEvery == 0:
                    while true {
                        let notBefore = TokenClock.coarse.now()
                        let t0 = SampleClock.ticks()
                        if t0 >= deadline { break }
                        // The batch's first call is the sample, timed from the batch's own read.
                        do throws(SessionError) {
                            let token = try await store.validToken()
                            let ticks = SampleClock.ticks() &- t0
                            _ = report.reads.record(ticks > floor ? ticks &- floor : 1)
                            checker.check(token, notBefore: notBefore)
                        } catch {
                            report.failures += 1
                        }
                        for _ in 1..<Self.batch {
                            do throws(SessionError) {
                                checker.check(try await store.validToken(), notBefore: notBefore)
                            } catch {
                                report.failures += 1
                            }
                        }
                        report.operations += UInt64(Self.batch)
                    }
                case (.measured, nil):
                    // A read/write mix: every `writeEvery`-th call reports a 401 for the token
                    // the caller holds. Every call is timed: writes are not uniform.
                    var held: AccessToken?
                    var calls = 0
                    while true {
                        let notBefore = TokenClock.coarse.now()
                        let t0 = SampleClock.ticks()
                        if t0 >= deadline { break }
                        calls += 1
                        do throws(SessionError) {
                            let isWrite = calls % writeEvery == 0
                            let token = try await (isWrite && held != nil ? store.tokenRejected(held!) : store.validToken())
                            let ticks = SampleClock.ticks() &- t0
                            if isWrite {
                                _ = report.writes.record(ticks > floor ? ticks &- floor : 1)
                            } else {
                                _ = report.reads.record(ticks > floor ? ticks &- floor : 1)
                            }
                            checker.check(token, notBefore: notBefore)
                            held = token
                        } catch {
                            report.failures += 1
                        }
                        report.operations += 1
                    }
                case (.measured, let interval?):
                    var intended = begin + interval * UInt64(worker) / UInt64(tasks)
                    while intended < deadline {
                        await Self.wait(until: intended)
                        let notBefore = TokenClock.coarse.now()
                        do throws(SessionError) {
                            let token = try await store.validToken()
                            let ticks = SampleClock.ticks() &- intended
                            _ = report.reads.record(ticks > floor ? ticks &- floor : 1)
                            checker.check(token, notBefore: notBefore)
                        } catch {
                            report.failures += 1
                        }
                        report.operations += 1
                        intended += interval
                    }
                }
                latch.finish(report)
            }
        }
        let before = counter?.snapshot()
        let start = ContinuousClock.now
        await line.arriveAndWait()
        let reports = await latch.wait(until: start + duration + runner.hangTimeout)
        let seconds = (ContinuousClock.now - start).seconds
        var allocations: AllocationCounter.Snapshot?
        if let after = counter?.snapshot(), let before {
            allocations = .init(count: after.count - before.count, bytes: after.bytes - before.bytes)
        }
        return Loop(reports: reports, seconds: seconds, allocations: allocations, stuck: tasks - latch.finishedCount)
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

/// The per-call invariants of a steady run: fresh (I4) and monotonic (I5).
struct ReadChecker {
    let worker: Int
    let oracle: Oracle?
    var lastGeneration: UInt64 = 0

    init(worker: Int, oracle: Oracle?) {
        self.worker = worker
        self.oracle = oracle
    }

    /// `notBefore` is a time no later than the call's start on the store's clock.
    @inline(__always)
    mutating func check(_ token: AccessToken, notBefore: TokenInstant) {
        if token.expiresAt <= notBefore {
            oracle?.report(.fresh, "worker \(worker) got generation \(token.generation), expired before the call")
        }
        if token.generation < lastGeneration {
            oracle?.report(.monotonic, "worker \(worker) got generation \(token.generation) after \(lastGeneration)")
        }
        lastGeneration = max(lastGeneration, token.generation)
    }
}

/// The cheapest possible store: one fixed token, no lock, no allocation. The harness runs
/// its loop over it to learn its own costs.
final class EmptyStore: SynchronousTokenReading {
    private let token: AccessToken

    init(lifetime: Duration, clock: TokenClock) {
        token = AccessToken(
            value: String(repeating: "e", count: 900), subject: Subject("empty"), generation: 1,
            expiresAt: clock.now() + lifetime)
    }

    func currentToken() -> AccessToken? { token }
    func validToken() async throws(SessionError) -> AccessToken { token }
    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken { self.token }
    func signIn(_ credentials: Credentials) async throws(SessionError) {}
    func signOut() async {}
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
