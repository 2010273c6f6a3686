import SessionContract
import SessionMeasurement
import SessionOracle
import SessionSync
import TokenServer

/// One run of `step-up`: the driver's state, and what it recorded for the judge.
struct StepUpSession: ContextDriver {
    let context: DriverContext
    let time: ManualTime
    let server: TokenServer
    let user: SimulatedUser
    let store: any StepUpSessionStore
    let stepUpLifetime: Duration
    let clients: [any SessionClient]
    /// Records and judges the session's own calls: sign-ins, sign-outs, token reads and 401s.
    let calls: CallLog
    static let users = [Subject("clinic-user-a@example.test"), Subject("clinic-user-b@example.test")]
    var subjects: [Subject] { Self.users }
    /// How each round's first prompt is answered: two rounds deny and dismiss, drawn from the seed.
    let answers: [SimulatedUser.Prompt.Answer]
    var subject = 0
    var family: UInt64 = 0
    /// API objects made while a user was signed in, kept for the rounds after.
    var later: [any SessionClient] = []
    /// The round whose user was signed in at the end of the round before (a switch during a prompt).
    var signedInAhead: Int?
    /// What the run saw, for ``StepUpJudge``: the sessions it ended among it.
    var history = StepUpHistory()

    init(
        context: DriverContext, time: ManualTime, server: TokenServer, user: SimulatedUser,
        store: any StepUpSessionStore, stepUpLifetime: Duration, calls: CallLog
    ) {
        self.calls = calls
        self.context = context
        let scenario = context.scenario
        self.time = time
        self.server = server
        self.user = user
        self.store = store
        self.stepUpLifetime = stepUpLifetime
        clients = (0..<StepUpDriver.keptClients).map { _ in store.makeClient() }
        var random = SeededRandom(seed: scenario.seed ^ 0x57E9)
        var answers = Array(repeating: SimulatedUser.Prompt.Answer.approved, count: scenario.rounds)
        if scenario.rounds >= 3 {
            let denied = 1 + Int(random.next() % UInt64(scenario.rounds - 1))
            var dismissed = 1 + Int(random.next() % UInt64(scenario.rounds - 1))
            if dismissed == denied { dismissed = denied == scenario.rounds - 1 ? 1 : denied + 1 }
            answers[denied] = .denied
            answers[dismissed] = .dismissed
        }
        self.answers = answers
    }

    typealias Call = StepUpHistory.Call

    mutating func play(outcome: inout DriverOutcome) async {
        outcome.stepUp = StepUpFigures()
        setContext("before sign-in")
        guard await checkClientsSignedOut(when: "before any sign-in", outcome: &outcome) else { return }
        for round in 0..<scenario.rounds {
            guard await play(round: round, outcome: &outcome) else { return }
        }
    }

    func setContext(_ context: String) {
        server.setContext(context)
        user.setContext(context)
    }

    // MARK: One round

    mutating func play(round: Int, outcome: inout DriverOutcome) async -> Bool {
        subject = round % 2
        if signedInAhead != round {
            guard await signIn(round: round, outcome: &outcome) else { return false }
        }
        guard await checkClientsServe(round: round, outcome: &outcome) else { return false }
        // API objects made while this user is signed in, kept for the rounds after.
        later += [store.makeClient(), store.makeClient()]

        // A burst with no elevated token: one prompt, held open; the session goes on meanwhile.
        guard
            await burst(
                round: round, label: "clinical burst", requests: scenario.tasks, answer: answers[round],
                independence: true, counted: true, outcome: &outcome)
        else { return false }
        if answers[round] != .approved {
            guard
                await burst(
                    round: round, label: "request after the \(answers[round].rawValue) prompt", requests: 1,
                    answer: .approved, independence: false, counted: false, outcome: &outcome)
            else { return false }
        }
        // A burst while the elevated token is fresh: no prompt.
        guard await cachedBurst(round: round, outcome: &outcome) else { return false }
        // The elevated token expires: one prompt again.
        time.advance(by: stepUpLifetime)
        guard
            await burst(
                round: round, label: "burst after the elevated token expired", requests: max(1, scenario.tasks / 2),
                answer: .approved, independence: false, counted: false, outcome: &outcome)
        else { return false }
        // How the session ends: a sign-out during a prompt, another user's sign-in during a prompt,
        // a sign-out with the elevated token fresh, or (the next round's sign-in) another user's
        // sign-in with it fresh.
        if round == scenario.rounds - 1 || round % 4 == 2 {
            return await signOutWithElevationHeld(round: round, outcome: &outcome)
        }
        switch round % 4 {
        case 0: return await signOutDuringPrompt(round: round, outcome: &outcome)
        case 1: return await switchDuringPrompt(round: round, outcome: &outcome)
        default: return true
        }
    }

    /// Signs in the user of `subject`; a sign-in over another user's session ends that one.
    mutating func signIn(round: Int, outcome: inout DriverOutcome) async -> Bool {
        setContext("round \(round): sign-in")
        let user = subjects[subject]
        let store = self.store
        let calls = self.calls
        guard
            let signedIn = await watched(
                "round \(round): sign-in", outcome: &outcome,
                { () async -> Result<Void, SessionError> in
                    do throws(SessionError) { try await calls.signIn(user, on: store) } catch { return .failure(error) }
                    return .success(())
                })
        else { return false }
        guard case .success = signedIn else {
            outcome.failure = "round \(round): sign-in failed"
            return false
        }
        if family != 0 { ended(round: round) }
        outcome.operations += 1
        family = server.ledger.entries.last { $0.call == .signIn }?.family ?? 0
        return true
    }

    // MARK: Bursts

    /// `requests` concurrent clinical requests with no fresh elevated token, the prompt held open
    /// until they have all arrived, then answered with `answer`.
    mutating func burst(
        round: Int, label: String, requests: Int, answer: SimulatedUser.Prompt.Answer, independence: Bool,
        counted: Bool, outcome: inout DriverOutcome
    ) async -> Bool {
        let phase = "round \(round): \(label)"
        setContext(phase)
        let before = user.prompts.count
        user.script(answer == .approved ? [] : [answer])
        user.gate.hold()
        let latch = launch(requests)
        let deadline = ContinuousClock.now + runner.hangTimeout
        // Until the prompt is up (or every request is back without one), then let the crowd settle.
        while user.prompts.count == before, latch.finishedCount < requests, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(1))
        }
        _ = await latch.waitForEntry(until: deadline)
        await Self.settle()
        var cancelled: CompletionLatch<Call>?
        if independence, user.prompts.count > before, user.gate.waitingCount > 0 {
            await checkIndependence(phase: phase, outcome: &outcome)
            cancelled = await launchCancelled()
        }
        user.gate.release()
        guard let calls = await collect(latch, phase: phase, outcome: &outcome) else { return false }
        if let cancelled {
            guard let answers = await collect(cancelled, phase: "\(phase): cancelled requests", outcome: &outcome)
            else { return false }
            observe(.cancelled(phase: phase, results: Self.elevated(answers), answer: answer, session: now))
        }
        // The burst's prompts are those shown while its first was open: a request that arrived
        // after a denial or a dismissal was answered rightly prompts again (I19), and counts apart.
        let shown = user.prompts.dropFirst(before).map(StepUpHistory.Prompt.init)
        let firstAnswered = shown.first?.answeredAt ?? .max
        if counted {
            outcome.stepUp?.bursts += 1
            outcome.stepUp?.burstPrompts += shown.count { $0.shownAt <= firstAnswered }
        }
        let results = Self.elevated(calls)
        outcome.operations += UInt64(results.count { (try? $0.get()) != nil })
        outcome.failedCalls += UInt64(results.count { (try? $0.get()) == nil })
        observe(
            .burst(phase: phase, requests: requests, results: results, shown: shown, answer: answer, session: now))
        return true
    }

    /// A burst while the elevated token is fresh: no prompt, and the sensitive call's fast path.
    mutating func cachedBurst(round: Int, outcome: inout DriverOutcome) async -> Bool {
        let phase = "round \(round): burst with the elevated token fresh"
        setContext(phase)
        let before = user.prompts.count
        let latch = launch(16)
        guard let calls = await collect(latch, phase: phase, outcome: &outcome) else { return false }
        observe(
            .freshBurst(
                phase: phase, results: Self.elevated(calls),
                shown: user.prompts.dropFirst(before).map(StepUpHistory.Prompt.init), session: now))
        // The fast path's cost, timed one call at a time.
        let client = clients[0]
        for _ in 0..<64 {
            let start = ContinuousClock.now
            guard (try? await client.elevatedToken()) != nil else { break }
            outcome.latencies.record(.elevatedRead, nanoseconds: (ContinuousClock.now - start).nanosecondsClamped)
            outcome.operations += 1
        }
        return true
    }

    /// The session must go on while the prompt is open: a read and a 401 (which refreshes) complete.
    /// The prompt stays open until they do, so they have the hang timeout: a store that waits on
    /// the prompt never completes them, and a loaded machine is not taken for one (beside 8 busy
    /// loops on 2 cores, a correct store's calls took over 1 s).
    mutating func checkIndependence(phase: String, outcome: inout DriverOutcome) async {
        let store = self.store
        let kept = clients[0]
        let calls = self.calls
        let limit = runner.hangTimeout
        let latch = CompletionLatch<Call>(expected: 1)
        Task {
            latch.enter()
            let read: Result<AccessToken, SessionError>
            do throws(SessionError) {
                let token = try await calls.call(.validToken, on: store, phase: phase).get()
                _ = try await calls.call(.clientToken(kept), on: store, phase: phase).get()
                _ = try await calls.call(.clientToken(store.makeClient()), on: store, phase: phase).get()
                read = await calls.call(.tokenRejected(token), on: store, kind: .rejection, phase: phase)
            } catch { read = .failure(error) }
            latch.finish(.base(read))
        }
        guard let calls = await latch.wait(until: .now + limit), case .base(let result) = calls.first else {
            observe(.independence(phase: phase, limit: limit, result: nil))
            return
        }
        if case .success = result { outcome.operations += 4 }
        observe(.independence(phase: phase, limit: limit, result: result.map { _ in () }))
    }
}
