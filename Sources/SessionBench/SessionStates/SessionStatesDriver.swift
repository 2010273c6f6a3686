import SessionContract
import SessionMeasurement
import SessionOracle
import SessionSync
import Synchronization
import TokenServer

/// Runs `session-states`: subscribers to a store's state, one and then `tasks` of them (and,
/// beside them, one slow subscriber that takes 1 ms over each state), through the events a UI
/// must follow. Each round: a sign-in, an expiry (a read refreshes), a 401 (a refresh), a
/// subscriber joining mid-session (its first state must be the current one), ten 401s back to
/// back, a sign-out while a refresh is held in flight at the server (released after the sign-out
/// returned: the store must discard it), a sign-in and a user switch, a revocation by the server
/// (a 401 refresh is refused), and at the end a sign-out.
///
/// After each event every subscriber's latest state must become the store's (signed in with the
/// new generation, signed out, revoked) within a deadline; the time from the call that made the
/// change to each subscriber's receipt of it is the observer lag (single events only, the slow
/// subscriber left out). Over each subscriber's whole sequence: nothing of a session after the
/// `signedOut` that ended it, nothing of a refresh that a sign-out discarded, and sessions and
/// generations never going back.
struct SessionStatesDriver: ContextDriver {
    let context: DriverContext

    /// How long a subscriber may take to see a change before it counts as never seeing it.
    static let deadline = Duration.seconds(2)

    /// What one subscriber received, with when (real nanoseconds).
    final class Log: Sendable {
        let received = Mutex<[(state: SessionState, at: Int64)]>([])
        var last: SessionState? { received.withLock(visibleTo: self) { $0.last?.state } }
        var all: [(state: SessionState, at: Int64)] { received.withLock(visibleTo: self) { $0 } }
    }

    /// Runs both phases; returns what each recorded, for ``StatesJudge`` after the run.
    func run(outcome: inout DriverOutcome) async -> [StatesHistory] {
        let started = ContinuousClock.now
        var refreshCalls = 0
        var recorded: [StatesHistory] = []
        for (count, kind) in [(1, OperationKind.observerLagOne), (scenario.tasks, .observerLagMany)] {
            let calls = await phase(observers: count, lag: kind, outcome: &outcome, recorded: &recorded)
            guard let calls else { break }
            refreshCalls += calls
        }
        outcome.observers = scenario.tasks
        outcome.refreshCalls = refreshCalls
        outcome.seconds = (ContinuousClock.now - started).secondsValue
        return recorded
    }

    /// One store, `observers` subscribers, every round; the server's refresh calls, or `nil` when
    /// the store hung. What the subscribers received is appended to `recorded`.
    func phase(
        observers: Int, lag: OperationKind, outcome: inout DriverOutcome, recorded: inout [StatesHistory]
    ) async -> Int? {
        let time = ManualTime()
        let server = TokenServer(configuration: scenario.serverConfiguration, clock: .manual(time))
        let skew = min(Duration.seconds(1), scenario.tokenLifetime / 4)
        let link = ServerLink(server, transport: runner.transport)
        defer { link.close() }
        let configuration = SessionStoreConfiguration(endpoint: link.endpoint, clock: .manual(time), refreshSkew: skew)
        guard let store = descriptor.make(configuration) as? any ObservableSessionStore else {
            outcome.failure =
                "\(descriptor.name) does not implement ObservableSessionStore: it cannot run session-states"
            return nil
        }
        // The subscribers and, beside many, one more that takes 1 ms over each state (a busy UI):
        // its lag is not timed, but it must end on every state like the others. The phase with
        // one subscriber has that one only.
        let slow = observers > 1
        let logs = (0..<(slow ? observers + 1 : observers)).map { _ in Log() }
        let subscribed = CompletionLatch<Void>(expected: logs.count)
        let readers = logs.enumerated().map { index, log in
            Task {
                let states = store.sessionStates()
                subscribed.finish(())
                for await state in states {
                    log.received.withLock(visibleTo: log) { $0.append((state, TokenServer.realNanoseconds())) }
                    if slow, index == observers { try? await Task.sleep(for: .milliseconds(1)) }
                }
            }
        }
        defer { for reader in readers { reader.cancel() } }
        guard await subscribed.patientValues(hangTimeout: runner.hangTimeout) != nil else {
            outcome.failure = "the subscribers' sessionStates() calls did not return"
            return nil
        }
        let calls = CallLog(users: StatesRun.users, clock: .manual(time), server: server)
        var run = StatesRun(
            context: context, observers: logs.count, timedObservers: observers, lag: lag, time: time, server: server,
            store: store, logs: logs, lifetime: scenario.tokenLifetime, calls: calls)
        func record(complete: Bool) {
            var history = run.history
            history.subscribers = logs.count
            history.received = logs.map { log in log.all.map { StatesHistory.Received($0.state, at: $0.at) } }
            history.ledger = server.ledger.entries
            history.complete = complete
            recorded.append(history)
        }
        for round in 0..<scenario.rounds {
            guard await run.play(round: round, last: round == scenario.rounds - 1, outcome: &outcome) else {
                record(complete: false)
                return nil
            }
        }
        record(complete: true)
        // Every call the subscribers' scenario made, judged against the contract like any other.
        var coverage = outcome.coverage ?? LifecycleCoverage()
        coverage.merge(calls.judge(skew: configuration.refreshSkew, into: oracle))
        outcome.coverage = coverage
        link.measure(into: &outcome)
        return server.ledger.refreshCalls
    }
}
