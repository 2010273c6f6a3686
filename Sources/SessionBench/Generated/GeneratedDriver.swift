import SessionContract
import SessionMeasurement
import SessionOracle
import SessionSync
import TokenServer

/// Runs `generated` on the machine's own threads: each round a program drawn from the seed (every
/// caller up to ``GeneratedProgram/slots`` steps of reads, 401s, synchronous reads, expiries,
/// sign-ins as either of two users, sign-outs and cancelled calls), all callers at once, against a
/// healthy server that answers after a short latency. Every call, sign-in and sign-out is judged
/// afterwards against the contract's model, and the ledger is audited. The interleavings are the
/// operating system's; `explore --scenario generated` makes them, and the programs, the
/// schedule's choices.
struct GeneratedDriver: ContextDriver {
    let context: DriverContext

    /// Past this many rounds, a seed's programs have expired the token in some round (each slot is
    /// an expiry or a 401 one time in 15 each): a run of as many with no refresh call did not play them.
    static let roundsWithAnExpiry = 20

    func run(outcome: inout DriverOutcome) async {
        let time = ManualTime()
        let server = TokenServer(configuration: scenario.serverConfiguration, clock: .manual(time))
        let skew = min(Duration.seconds(1), scenario.tokenLifetime / 4)
        let link = ServerLink(server, transport: runner.transport)
        defer { link.close() }
        let store = descriptor.make(
            SessionStoreConfiguration(endpoint: link.endpoint, clock: .manual(time), refreshSkew: skew))
        let users = [Subject("generated-user"), Subject("generated-other-user")]
        let log = CallLog(users: users, clock: .manual(time), server: server)
        let player = ProgramPlayer(
            time: time, server: server, store: store, log: log, users: users, lifetime: scenario.tokenLifetime,
            skew: skew)
        var random = SeededRandom(seed: scenario.seed)
        let started = ContinuousClock.now
        defer { outcome.seconds = (ContinuousClock.now - started).secondsValue }
        server.setContext("sign-in")
        guard
            await bounded(
                phase: "sign-in", callers: 1, outcome: &outcome, { try? await log.signIn(users[0], on: store) })
                != nil
        else { return finish(log, server, link, skew, &outcome) }
        for round in 0..<scenario.rounds {
            let program = GeneratedProgram.generated(callers: scenario.tasks) { Int(random.next() % UInt64($0)) }
            let caller = player.between(program)
            guard
                let prepared = await bounded(
                    phase: "round \(round) start", callers: 1, outcome: &outcome,
                    { await player.prepare(round: round, caller: caller) })
            else { break }
            guard let seen = prepared else {
                outcome.failure =
                    "round \(round + 1) of \(scenario.rounds): the store could not be brought back to a session "
                    + "(a read, a sign-in and a read again against a healthy server), so the programs stopped"
                break
            }
            guard
                await bounded(
                    phase: "round \(round): " + program.lines.joined(separator: "; "), callers: scenario.tasks,
                    outcome: &outcome, { await player.play(program, round: round, seen: seen) }) != nil
            else { break }
        }
        if outcome.hang == nil {
            server.setContext("sign-out")
            _ = await bounded(phase: "the last sign-out", callers: 1, outcome: &outcome) { await log.signOut(store) }
        }
        finish(log, server, link, skew, &outcome)
    }

    /// Runs `body`, and gives up on it after the runner's hang timeout: the store never answered
    /// in `phase` (the hang is the run's verdict; its task is left behind). What `body` returned,
    /// or `nil` then.
    private func bounded<Value: Sendable>(
        phase: String, callers: Int, outcome: inout DriverOutcome, _ body: @escaping @Sendable () async -> Value
    ) async -> Value? {
        let latch = CompletionLatch<Value>(expected: 1)
        Task {
            latch.enter()
            latch.finish(await body())
        }
        let start = ContinuousClock.now
        guard let values = await latch.patientValues(hangTimeout: runner.hangTimeout), let value = values.first else {
            outcome.hang = .init(
                stuckCallers: 1, ofCallers: callers, operation: .read,
                waitedSeconds: (ContinuousClock.now - start).secondsValue,
                phase: phase, detail: "a call of the program never returned")
            return nil
        }
        return value
    }

    /// The run's figures and its judgement: every call's latency by kind, the refresh calls, and
    /// the contract's model over every call, sign-in and sign-out.
    private func finish(
        _ log: CallLog, _ server: TokenServer, _ link: ServerLink, _ skew: Duration, _ outcome: inout DriverOutcome
    ) {
        let calls = log.calls
        for call in calls where call.error == nil {
            outcome.latencies.record(call.kind, nanoseconds: call.endedNanos - call.startedNanos)
        }
        outcome.operations = UInt64(calls.count { $0.error == nil })
        outcome.refreshCalls = server.ledger.refreshCalls
        link.measure(into: &outcome)
        let handed = Set(calls.compactMap { $0.token?.generation })
        oracle.auditLedger(server.ledger.entries) { handed.contains($0) }
        outcome.coverage = log.judge(skew: skew, clockMoves: true, into: oracle)
    }
}
