import Histogram
import SessionContract
import SessionMeasurement
import SessionOracle
import SessionSync
import Synchronization
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
/// costs: its throughput is the ceiling), a bare loop over the store with no timing and no
/// checks (what the store does when nobody watches), then the measured loop over the store,
/// whose allocations are counted inside each caller's calls to the store and nowhere else
/// (``CallerAllocations``): the harness's own are never in the count, so none are taken out.
struct SteadyDriver: ContextDriver {
    let context: DriverContext

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

    func run(counter: AllocationCounter?, outcome: DriverOutcome) async -> DriverOutcome {
        var outcome = outcome
        let clock = TokenClock.coarse
        let server = TokenServer(configuration: scenario.serverConfiguration, clock: clock)
        server.setContext("steady reads")
        let link = ServerLink(server, transport: runner.transport)
        defer { link.close() }
        let configuration = SessionStoreConfiguration(endpoint: link.endpoint, clock: clock)
        let store = descriptor.make(configuration)
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
        var history = SteadyHistory(
            signedIn: signedIn, skew: configuration.refreshSkew,
            readsOnly: scenario.readersPerWriter == nil && scenario.writeInterval == nil, endedAt: clock.now())
        let short = min(scenario.duration, .milliseconds(100))
        let empty = await loop(
            EmptyStore(lifetime: scenario.tokenLifetime, clock: clock), .measured, short, nil, checked: false)
        let bare = await loop(store, .bare, short, nil, checked: false)
        // writes-under-reads: the writer runs through the measured loop (and the synchronous
        // reads below), never through the loops that set the harness's figures.
        let asyncWriter = scenario.writeInterval.map {
            SteadyWriter(store, every: $0, caller: scenario.tasks, phase: "writes under async reads")
        }
        let measured = await loop(store, .measured, scenario.duration, counter, checked: true)
        var asyncWrites: SteadyWriter.Tally?
        if let asyncWriter {
            guard let tally = await asyncWriter.finish(hangTimeout: runner.hangTimeout) else {
                outcome.hang = asyncWriter.hang(after: runner.hangTimeout)
                return outcome
            }
            asyncWrites = tally
        }
        outcome.seconds = measured.seconds
        outcome.allocations = measured.allocations
        for stage in [("bare loop", bare), ("steady reads", measured)] {
            guard stage.1.reports == nil else { continue }
            outcome.hang = .init(
                stuckCallers: stage.1.stuck, ofCallers: scenario.tasks, operation: .read,
                waitedSeconds: runner.hangTimeout.secondsValue, phase: stage.0,
                detail: RoundDriver.refreshStatus(server: server, since: max(0, server.ledger.entries.count - 8)))
            return outcome
        }
        let reports = measured.reports ?? []
        var recorder = LatencyRecorder()
        var errors: [ObservedCall] = asyncWrites?.errors ?? []
        if let asyncWrites, asyncWrites.writes > 0 { recorder.add(.rejection, asyncWrites.latency) }
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
        outcome.callerSpread = ThroughputSpread(
            reports.map { report in
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
        if let reader = store as? any SynchronousTokenReading, scenario.arrivalRate == nil, scenario.syncThreads != 0 {
            let driver = SyncReadDriver(scenario: scenario, oracle: oracle, hangTimeout: runner.hangTimeout)
            let phaseStart = (TokenServer.realNanoseconds(), clock.now())
            let syncWriter = scenario.writeInterval.map {
                SteadyWriter(store, every: $0, caller: scenario.tasks, phase: "writes under synchronous reads")
            }
            let syncRun = await driver.run(reader, clock: clock)
            if let syncWriter {
                guard let syncWrites = await syncWriter.finish(hangTimeout: runner.hangTimeout) else {
                    outcome.hang = syncWriter.hang(after: runner.hangTimeout)
                    return outcome
                }
                errors += syncWrites.errors
                if syncWrites.writes > 0 { recorder.add(.syncWrite, syncWrites.latency) }
            }
            switch syncRun {
            case .finished(let figures, let latency, let anomalies):
                // Every nil needs a reason: a refresh under way, or a token due, during the phase.
                let (entries, issued) = (server.ledger.entries, server.issuedTokens)
                history.misses = .init(
                    count: figures.misses, calls: figures.operations, from: phaseStart,
                    to: (TokenServer.realNanoseconds(), clock.now()), entries: entries, issued: issued)
                outcome.syncRead = figures
                outcome.clockAnomalies += anomalies
                if latency.totalCount > 0 { recorder.add(.syncRead, latency) }
            case .stuck(let count, starvedSeconds: nil):
                outcome.hang = .init(
                    stuckCallers: count, ofCallers: driver.threads, operation: .syncRead,
                    waitedSeconds: runner.hangTimeout.secondsValue, phase: "synchronous reads",
                    detail: "threads still inside currentToken() when the time was up")
            case .stuck(_, starvedSeconds: let starved?):
                // Not the store's doing: the run has no verdict (ReaderStarvation).
                outcome.failure =
                    "synchronous reads: the reader threads wanted a CPU and were given almost no CPU for "
                    + "\(InputRange.text((starved * 10).rounded() / 10)) s, so a slow store cannot be told from a stuck one "
                    + "(run on a quieter machine, or raise --hang-timeout)"
                return outcome
            }
        }
        outcome.latencies = recorder
        outcome.refreshCalls = server.ledger.refreshCalls
        link.measure(into: &outcome)
        outcome.emptyStoreThroughput = empty.throughput
        outcome.bareLoopThroughput = bare.throughput
        history.errors = errors
        history.entries = server.ledger.entries
        history.issued = server.issuedTokens
        history.endedAt = clock.now()
        oracle.record(SteadyJudge.judge(history))
        return outcome
    }

}
