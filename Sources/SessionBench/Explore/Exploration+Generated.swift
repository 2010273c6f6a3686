import SessionContract
import SessionOracle
import TokenServer

extension Exploration {
    /// The rounds of `generated`: the first user signs in; each round the schedule writes a small
    /// program — every caller up to ``GeneratedProgram/slots`` steps, each a read, a 401 of the
    /// last token it saw, a synchronous read, an expiry, a sign-in as either user, a sign-out, or a
    /// read or 401 that another task cancels — and the callers play it at once, from a read (and a
    /// sign-in when the last round signed out). Every step is a choice of the schedule, so the
    /// replay string carries the program, and shrinking drops the steps the failure does not need.
    /// Judged like every exploration: the contract's model over every call, sign-in and sign-out,
    /// and the ledger.
    /// `crashes`: a step may also be a crash (``crashRounds(_:_:)``).
    static func generatedRounds(
        _ descriptor: StoreDescriptor, _ scenario: Scenario, crashes: Bool = false
    ) async -> (violations: [Violation], digest: ScheduleDigest, trace: StormTrace) {
        let world = ControlledWorld(
            descriptor, scenario, users: [Subject("explore-user"), Subject("explore-other-user")], crashes: crashes)
        guard await world.signIn() else { return world.judged(digested: false) }
        let player = ProgramPlayer(
            time: world.time, server: world.server, store: world.store, log: world.log, users: world.users,
            lifetime: scenario.tokenLifetime, skew: world.skew,
            restart: crashes ? { @Sendable in world.restart() } : nil)
        let steps = crashes ? ProgramStep.allCases : ProgramStep.steps
        var lines: [String] = []
        var values: [Int] = []
        for round in 0..<scenario.rounds {
            let program = chosenProgram(callers: scenario.tasks, steps: steps, values: &values)
            lines += program.lines.map { "round \(round), \($0)" }
            guard let seen = await player.prepare(round: round, caller: scenario.tasks) else { break }
            await player.play(program, round: round, seen: seen)
        }
        world.server.setContext("sign-out")
        await world.log.signOut(player.store)
        var judged = world.judged(clockMoves: true)
        judged.trace.marks = player.marks
        judged.trace.cancelPoints = CancelPoint.points(
            judged.trace.calls, marks: player.marks, entries: judged.trace.entries)
        judged.trace.program = lines
        judged.trace.programValues = values
        return judged
    }

    /// A program of `callers` callers whose every step is a choice of the schedule, each value
    /// appended to `values` (``FixedValues`` plays them again).
    static func chosenProgram(
        callers: Int, steps: [ProgramStep] = ProgramStep.steps, values: inout [Int]
    ) -> GeneratedProgram {
        GeneratedProgram.generated(callers: callers, steps: steps) { count in
            let value = ControlledExecution.choose(count)
            values.append(value)
            return value
        }
    }
}
