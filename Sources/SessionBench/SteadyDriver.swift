import Histogram
import SessionContract
import TokenServer

/// Callers read a long-lived token as fast as they can (closed loop) or at a fixed total
/// arrival rate (open loop, latency measured from each call's intended start, so a stalled
/// store is charged for the calls it delayed — the coordinated-omission correction of wrk2).
///
/// Before the store, the same loop runs briefly over an empty store (a constant token): what
/// it allocates is the harness's own fixed cost (waking the workers, the watchdog's timer),
/// taken out of the store's count.
struct SteadyDriver {
    let runner: ScenarioRunner
    let descriptor: StoreDescriptor
    let scenario: Scenario
    let oracle: Oracle

    /// One worker's tally, merged after the run.
    struct WorkerReport: Sendable {
        var operations: UInt64 = 0
        var failures: UInt64 = 0
        var reads: Histogram<UInt64>
    }

    /// What one measured loop produced.
    struct Loop {
        var reports: [WorkerReport]?
        var seconds: Double
        var allocations: AllocationCounter.Snapshot?
        var stuck: Int
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
        let empty = EmptyStore(lifetime: scenario.tokenLifetime, clock: clock)
        let baseline = await loop(empty, duration: min(scenario.duration, .milliseconds(50)), counter: counter, checked: false)
        let measured = await loop(store, duration: scenario.duration, counter: counter, checked: true)
        outcome.seconds = measured.seconds
        if let total = measured.allocations, let fixed = baseline.allocations {
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
            recorder.add(.read, report.reads)
        }
        outcome.latencies = recorder
        outcome.refreshCalls = server.ledger.refreshCalls
        if let emptyReports = baseline.reports, baseline.seconds > 0 {
            outcome.emptyStoreThroughput = Double(emptyReports.reduce(0) { $0 + $1.operations }) / baseline.seconds
        }
        return outcome
    }

    /// Runs `scenario.tasks` workers against `store` for `duration`.
    func loop(_ store: any SessionStore, duration: Duration, counter: AllocationCounter?, checked: Bool) async -> Loop {
        let tasks = scenario.tasks
        let line = StartLine(count: tasks + 1)
        let latch = CompletionLatch<WorkerReport>(expected: tasks)
        let durationNs = duration.nanosecondsClamped
        let staleMargin = TokenClock.coarse.resolution.nanosecondsClamped
        // Per-worker interval in the open loop: each worker takes an equal share of the rate.
        let interval: Int64? = scenario.arrivalRate.map { Int64(Double(tasks) / $0 * 1e9) }
        let oracle = checked ? self.oracle : nil
        for worker in 0..<tasks {
            Task {
                var report = WorkerReport(reads: LatencyRecorder.emptyHistogram())
                await line.arriveAndWait()
                latch.enter()
                let precise = TokenClock.system
                let begin = precise.now().nanoseconds
                let deadline = begin + durationNs
                var intended = begin + (interval.map { $0 * Int64(worker) / Int64(tasks) } ?? 0)
                var lastGeneration: UInt64 = 0
                while true {
                    var t0 = precise.now().nanoseconds
                    if t0 >= deadline { break }
                    if let interval {
                        await Self.wait(until: intended, clock: precise)
                        t0 = intended
                        intended += interval
                    }
                    do throws(SessionError) {
                        let token = try await store.validToken()
                        let t1 = precise.now().nanoseconds
                        _ = report.reads.record(UInt64(clamping: max(t1 - t0, 1)))
                        if token.expiresAt.nanoseconds <= t0 - staleMargin {
                            oracle?.report(.fresh, "worker \(worker) got generation \(token.generation), expired before the call")
                        }
                        if token.generation < lastGeneration {
                            oracle?.report(
                                .monotonic, "worker \(worker) got generation \(token.generation) after \(lastGeneration)")
                        }
                        lastGeneration = max(lastGeneration, token.generation)
                    } catch {
                        report.failures += 1
                    }
                    report.operations += 1
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

    /// Sleeps most of the way to `instant`, then yields, so open-loop starts are on time.
    static func wait(until instant: Int64, clock: TokenClock) async {
        while true {
            let remaining = instant - clock.now().nanoseconds
            if remaining <= 0 { return }
            if remaining > 200_000 {
                try? await Task.sleep(for: .nanoseconds(remaining - 100_000))
            } else {
                await Task.yield()
            }
        }
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
