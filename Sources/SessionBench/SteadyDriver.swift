import Histogram
import SessionContract
import TokenServer

/// Callers read a long-lived token as fast as they can (closed loop) or at a fixed total
/// arrival rate (open loop, latency measured from each call's intended start, so a stalled
/// store is charged for the calls it delayed — the coordinated-omission correction of wrk2).
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

        let tasks = scenario.tasks
        let line = StartLine(count: tasks + 1)
        let latch = CompletionLatch<WorkerReport>(expected: tasks)
        let duration = scenario.duration.nanosecondsClamped
        let staleMargin = clock.resolution.nanosecondsClamped
        // Per-worker interval in the open loop: each worker takes an equal share of the rate.
        let interval: Int64? = scenario.arrivalRate.map { Int64(Double(tasks) / $0 * 1e9) }
        for worker in 0..<tasks {
            let oracle = self.oracle
            Task {
                var report = WorkerReport(reads: LatencyRecorder.emptyHistogram())
                await line.arriveAndWait()
                latch.enter()
                let precise = TokenClock.system
                let begin = precise.now().nanoseconds
                let deadline = begin + duration
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
                            oracle.report(.fresh, "worker \(worker) got generation \(token.generation), expired before the call")
                        }
                        if token.generation < lastGeneration {
                            oracle.report(
                                .monotonic,
                                "worker \(worker) got generation \(token.generation) after \(lastGeneration)")
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
        let reports = await latch.wait(until: start + scenario.duration + runner.hangTimeout)
        outcome.seconds = (ContinuousClock.now - start).seconds
        if let after = counter?.snapshot(), let before {
            outcome.allocations = .init(count: after.count - before.count, bytes: after.bytes - before.bytes)
        }
        guard let reports else {
            outcome.hang = .init(
                stuckCallers: tasks - latch.finishedCount, ofCallers: tasks, operation: .read,
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
        return outcome
    }

    /// Sleeps most of the way to `instant`, then spins, so open-loop starts are on time.
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

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
