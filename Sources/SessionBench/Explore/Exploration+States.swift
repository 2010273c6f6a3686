import SessionContract
import SessionOracle
import TokenServer

extension Exploration {
    /// The rounds of `session-states`: generated programs (``generatedRounds(_:_:)``) played on
    /// a store whose state is observed. Two subscribers subscribe before the first sign-in, and
    /// each round one more joins at a point the schedule picks while the program plays. Once a
    /// round's program is done and every task has run as far as it can
    /// (``ControlledExecution/settle(waiting:)``), a new subscriber joins, and each subscriber's latest
    /// state must be the one that new subscriber got first, and the session's own (with a
    /// synchronous read, `currentToken()`'s generation): every subscriber reaches the store's
    /// state (I23). After the last round's sign-out, that state is `signedOut`. Over each
    /// subscriber's whole sequence: nothing of a session after the `signedOut` that ended it,
    /// nothing of a refresh a fence discarded (I24), and sessions and generations never going
    /// back (I25). Every call is judged like every exploration's.
    static func stateRounds(
        _ descriptor: StoreDescriptor, _ scenario: Scenario
    ) async -> (violations: [Violation], digest: ScheduleDigest, trace: StormTrace) {
        let world = ControlledWorld(
            descriptor, scenario, users: [Subject("explore-user"), Subject("explore-other-user")])
        guard let store = world.store as? any ObservableSessionStore else {
            preconditionFailure("Internal inconsistency: \(descriptor.name) has no state stream (session-states)")
        }
        let subscribers = StateSubscribers(store, firstCaller: scenario.tasks + 1)
        defer { subscribers.cancel() }
        subscribers.enter("sign-in")
        subscribers.join()
        subscribers.join()
        guard await world.signIn() else { return world.judged(digested: false) }
        let player = ProgramPlayer(
            time: world.time, server: world.server, store: store, log: world.log, users: world.users,
            lifetime: scenario.tokenLifetime, skew: world.skew)
        var lines: [String] = []
        var values: [Int] = []
        var findings: [ContractJudge.Finding] = []
        for round in 0..<scenario.rounds {
            let program = chosenProgram(callers: scenario.tasks, values: &values)
            lines += program.lines.map { "round \(round), \($0)" }
            subscribers.enter("round \(round) start")
            guard let seen = await player.prepare(round: round, caller: scenario.tasks) else { break }
            subscribers.enter("round \(round)")
            // One more subscriber joins while the program plays, where the schedule puts it.
            async let joined = subscribers.join()
            await player.play(program, round: round, seen: seen)
            _ = await joined
            findings += await subscribers.settled(
                after: "round \(round)", reader: store as? any SynchronousTokenReading)
        }
        world.server.setContext("sign-out")
        subscribers.enter("sign-out")
        await world.log.signOut(store)
        findings += await subscribers.settled(after: "the last sign-out", expected: .signedOut)
        // Two schedules that differ only in what subscribers were told differ in their digest too.
        var judged = world.judged(
            clockMoves: true,
            digestAlso: subscribers.received.enumerated().flatMap { index, states in
                states.map { "sub \(index) \($0.state)" }
            })
        var history = StatesHistory(subscribers: subscribers.count)
        history.received = subscribers.received
        history.ledger = judged.trace.entries
        history.discarded = Self.discarded(world.log.events, entries: judged.trace.entries)
        history.complete = true
        world.oracle.record(findings + StatesJudge.judgeSequences(history))
        judged.violations = world.oracle.violations
        judged.trace.marks = (player.marks + subscribers.marks).sorted { $0.nanos < $1.nanos }
        judged.trace.cancelPoints = CancelPoint.points(
            judged.trace.calls, marks: player.marks, entries: judged.trace.entries)
        judged.trace.program = lines
        judged.trace.programValues = values
        return judged
    }

    /// The generations issued by refreshes answered after a fence — a sign-out, a sign-in — had
    /// ended their session and returned: the store must discard them, and tell no subscriber.
    /// (Fences take turns, so the fence that ends a session is the first to start after its
    /// sign-in returned.)
    static func discarded(_ events: [SessionEvent], entries: [LedgerEntry]) -> Set<UInt64> {
        let fences = events.sorted { $0.startedNanos < $1.startedNanos }
        var discarded: Set<UInt64> = []
        for entry in entries where entry.call == .refresh {
            guard let generation = entry.issuedGeneration, let answered = entry.respondedAt,
                let start = fences.first(where: { $0.family == entry.family }),
                let end = fences.first(where: { $0.startedNanos > start.returnedNanos })
            else { continue }
            if end.returnedNanos < answered { discarded.insert(generation) }
        }
        return discarded
    }
}
