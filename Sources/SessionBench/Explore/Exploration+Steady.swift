import SessionContract
import SessionOracle
import TokenServer

extension Exploration {
    /// The rounds of `writes-under-reads`: one user signs in; each round every
    /// caller but the first reads, `currentToken()` (a read on a store without the synchronous
    /// path) and `validToken()` in turn, ``readsPerRound`` times, while the first caller is the
    /// writer — with `writeInterval` set (`writes-under-reads`), a 401 of the token it holds, the
    /// token coming due, and another 401, each followed by a read of its own (without a writer,
    /// the token coming due and expiring under the readers, with reads between). Where each read lands among the writer's steps is the
    /// schedule's choice: a read must never get a token a 401 already rotated away, a refresh
    /// must stay single-flight however the reads crowd it. Judged like every exploration.
    static func steadyRounds(
        _ descriptor: StoreDescriptor, _ scenario: Scenario
    ) async -> (violations: [Violation], digest: ScheduleDigest, trace: StormTrace) {
        let world = ControlledWorld(descriptor, scenario, users: [Subject("explore-user")])
        guard await world.signIn() else { return world.judged(digested: false) }
        let player = ProgramPlayer(
            time: world.time, server: world.server, store: world.store, log: world.log, users: world.users,
            lifetime: scenario.tokenLifetime, skew: world.skew)
        let program = steadyProgram(callers: scenario.tasks, writing: scenario.writeInterval != nil)
        var lines: [String] = []
        for round in 0..<scenario.rounds {
            lines += program.lines.map { "round \(round), \($0)" }
            guard let seen = await player.prepare(round: round, caller: scenario.tasks) else { break }
            await player.play(program, round: round, seen: seen)
        }
        world.server.setContext("sign-out")
        await world.log.signOut(world.store)
        var judged = world.judged(clockMoves: true)
        judged.trace.marks = player.marks
        judged.trace.program = lines
        return judged
    }

    /// Reads each reader makes in a round.
    static let readsPerRound = 4

    /// The program of every round: readers, and a writer (``steadyRounds(_:_:)``).
    static func steadyProgram(callers: Int, writing: Bool) -> GeneratedProgram {
        // The writer reads too, after each of its 401s: what the others are handed then.
        let writer: [ProgramStep] =
            writing ? [.reject, .current, .due, .reject, .read] : [.due, .current, .expire, .read]
        let reader = (0..<readsPerRound).map { $0.isMultiple(of: 2) ? ProgramStep.current : .read }
        return GeneratedProgram(callers: [writer] + Array(repeating: reader, count: max(0, callers - 1)))
    }
}
