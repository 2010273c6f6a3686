import SessionContract
import SessionMeasurement
import SessionOracle
import SessionSync
import TokenServer

/// Runs `step-up`: seed 000's clinical records through seed 001's API objects.
///
/// Four API objects are made before anyone signs in, as the seeds' `CurrentAccessibleProxy`
/// makes them, and kept for the whole run; before sign-in their calls must fail with
/// `signedOut`. Each round signs a user in (the users alternate), checks that the kept API
/// objects — and two more made in each earlier session — now serve that user, then sends bursts
/// of concurrent clinical requests, half through the kept objects and half through API objects
/// made on demand:
/// - a burst of `tasks` requests with no elevated token: the user's prompt is held open while
///   the crowd piles in, and meanwhile token reads (from the store, from an API object waiting
///   on the prompt, from a new one) and a 401 (a base refresh) must complete; then the user
///   answers — approves, or, in two seeded rounds, denies or dismisses, after which one more
///   request must prompt again;
/// - a burst while the elevated token is fresh: no prompt;
/// - a burst after the elevated token expired: one prompt.
/// Rounds end in turn with a sign-out while a prompt is open, another user's sign-in while a
/// prompt is open, a sign-out with the elevated token fresh, and another user's sign-in with it
/// fresh (the next round's). The waiters of a prompt open when its session ends must get
/// `signedOut`, the late approval must buy nothing, no elevated token may outlive its session,
/// and no server call may be made for an ended session afterwards.
struct StepUpDriver: ContextDriver {
    let context: DriverContext

    /// API objects made before sign-in and kept throughout.
    static let keptClients = 4

    func run(outcome: inout DriverOutcome) async {
        let time = ManualTime()
        let stepUpLifetime = scenario.tokenLifetime / 5
        var serverConfiguration = scenario.serverConfiguration
        serverConfiguration.stepUpLifetime = stepUpLifetime
        let server = TokenServer(configuration: serverConfiguration, clock: .manual(time))
        let user = SimulatedUser(server: server)
        let skew = min(Duration.seconds(1), stepUpLifetime / 4)
        let link = ServerLink(server, transport: runner.transport)
        defer { link.close() }
        let configuration = SessionStoreConfiguration(
            endpoint: link.endpoint, clock: .manual(time), refreshSkew: skew, authenticator: user)
        guard let store = descriptor.make(configuration) as? any StepUpSessionStore else {
            outcome.failure = "\(descriptor.name) does not implement StepUpSessionStore: it cannot run step-up"
            return
        }
        let calls = CallLog(users: StepUpSession.users, clock: .manual(time), server: server)
        var session = StepUpSession(
            context: context, time: time, server: server, user: user, store: store,
            stepUpLifetime: stepUpLifetime, calls: calls)
        let started = ContinuousClock.now
        await session.play(outcome: &outcome)
        outcome.seconds = (ContinuousClock.now - started).secondsValue
        outcome.refreshCalls = server.ledger.refreshCalls
        outcome.stepUp?.prompts = user.prompts.count
        outcome.stepUp?.elevateCalls = server.ledger.elevateCalls
        link.measure(into: &outcome)
        session.history.ledger = server.ledger.entries
        oracle.record(StepUpJudge.judge(session.history))
        // The session's own calls among the bursts, judged against the contract like any other.
        outcome.coverage = calls.judge(skew: configuration.refreshSkew, into: oracle)
    }
}
