import SessionContract
import SessionOracle
import TokenServer

extension Exploration {
    /// The rounds of `step-up`: API objects are made before anyone signs in (one per caller, kept
    /// throughout), and a clinical request and a token read through them must fail with
    /// `signedOut`; then the first user signs in, and each round the schedule writes a program —
    /// every caller up to ``StepUpStep/slots`` steps, each a clinical request (through its kept API
    /// object, a new one, or from a task another cancels), a token read (the store's, its API
    /// object's), a 401, the access token or the elevated token expiring, a sign-in as either
    /// user, a sign-out — and the callers play it at once. Each prompt the store shows is answered
    /// as the schedule picks: approved, denied or dismissed, at once or late, or only once every
    /// other task has run as far as it can (``ExploringUser``). The replay string carries the
    /// program and the answers. Judged: every clinical request and prompt against the model of
    /// ``StepUpModelJudge`` (I4, I11, I12, I18–I22), and every other call like every
    /// exploration's.
    static func stepUpRounds(
        _ descriptor: StoreDescriptor, _ scenario: Scenario
    ) async -> (violations: [Violation], digest: ScheduleDigest, trace: StormTrace) {
        let choices = ChoiceLog()
        let stepUpLifetime = scenario.tokenLifetime / 5
        let world = ControlledWorld(
            descriptor, scenario, users: [Subject("explore-user"), Subject("explore-other-user")],
            stepUpLifetime: stepUpLifetime, choices: choices)
        guard let store = world.store as? any StepUpSessionStore, let user = world.user else {
            preconditionFailure("Internal inconsistency: \(descriptor.name) offers no step-up (step-up)")
        }
        let player = ProgramPlayer(
            time: world.time, server: world.server, store: store, log: world.log, users: world.users,
            lifetime: scenario.tokenLifetime, skew: world.skew)
        let stepUp = StepUpPlayer(
            player: player, store: store, callers: scenario.tasks, stepUpLifetime: stepUpLifetime)
        user.setPhase("before sign-in")
        await stepUp.beforeSignIn(caller: scenario.tasks)
        user.setPhase("sign-in")
        guard await world.signIn() else { return world.judged(digested: false) }
        var lines: [String] = []
        for round in 0..<scenario.rounds {
            let program = StepUpStep.program(callers: scenario.tasks, choices: choices)
            lines += StepUpStep.lines(program).map { "round \(round), \($0)" }
            user.setPhase("round \(round) start")
            guard let seen = await player.prepare(round: round, caller: scenario.tasks) else { break }
            user.setPhase("round \(round)")
            await stepUp.play(program, round: round, seen: seen)
        }
        world.server.setContext("sign-out")
        user.setPhase("sign-out")
        await world.log.signOut(store)
        let (elevations, prompts) = (stepUp.elevations, user.prompts)
        var judged = world.judged(
            clockMoves: true,
            digestAlso: elevations.map { call in
                switch call.answer {
                case .elevated(let generation, _, _): "\(call.who) e\(generation)"
                case .error(let error): "\(call.who) \(error)"
                }
            } + prompts.map { "prompt \($0.index) \($0.slot ?? -1) \($0.answer?.rawValue ?? "-") \($0.stuck)" })
        let timeline = SessionTimeline(
            events: world.log.events, entries: judged.trace.entries, issued: world.server.issuedTokens)
        world.oracle.record(
            StepUpModelJudge.judge(
                elevations: elevations, prompts: prompts, timeline: timeline, lifetime: stepUpLifetime))
        judged.violations = world.oracle.violations
        judged.trace.marks = (stepUp.marks + user.marks).sorted { $0.nanos < $1.nanos }
        judged.trace.program = lines
        judged.trace.programValues = choices.values
        return judged
    }
}
