import SessionContract
import SessionOracle
import TokenServer

extension Exploration {
    /// Accounts of `family`: each with a store of its own, over one server and one clock.
    static let familyAccounts = 2

    /// The rounds of `family`: two accounts, each with a store of its own made by the same
    /// descriptor and two users of its own, over one server and one clock. Each round the schedule
    /// writes a generated program for each account (``generatedRounds(_:_:)``; half the callers
    /// each), and both play at once: an expiry one caller makes is every account's, a sign-out
    /// ends its own account's session only. A store that shares what it should keep per instance —
    /// a refresh in flight, a cached token, a process-wide coordinator — hands one account's token
    /// to the other (I9) or refreshes one account's session for the other's caller. Judged like
    /// every exploration, each call against its own account's sessions.
    static func familyRounds(
        _ descriptor: StoreDescriptor, _ scenario: Scenario
    ) async -> (violations: [Violation], digest: ScheduleDigest, trace: StormTrace) {
        let accounts = (0..<familyAccounts).map {
            [Subject("explore-\($0)-user"), Subject("explore-\($0)-other-user")]
        }
        let world = ControlledWorld(descriptor, scenario, accounts: accounts)
        let callers = max(1, scenario.tasks / familyAccounts)
        let players = world.stores.indices.map { account in
            ProgramPlayer(
                time: world.time, server: world.server, store: world.stores[account], log: world.log,
                users: accounts[account], lifetime: scenario.tokenLifetime, skew: world.skew, account: account,
                firstCaller: account * (callers + 1))
        }
        guard await world.signIn() else { return world.judged(digested: false) }
        var lines: [String] = []
        var values: [Int] = []
        for round in 0..<scenario.rounds {
            let programs = players.map { _ in chosenProgram(callers: callers, values: &values) }
            for (player, program) in zip(players, programs) {
                lines += program.lines(firstCaller: player.firstCaller).map {
                    "round \(round), account \(player.account), \($0)"
                }
            }
            var seen: [AccessToken?] = []
            for (player, program) in zip(players, programs) {
                seen.append(await player.prepare(round: round, caller: player.between(program)))
            }
            guard seen.allSatisfy({ $0 != nil }) else { break }
            await withTaskGroup(of: Void.self) { group in
                for (index, player) in players.enumerated() {
                    let (program, token) = (programs[index], seen[index])
                    group.addTask { await player.play(program, round: round, seen: token) }
                }
            }
        }
        world.server.setContext("sign-out")
        for player in players { await world.log.signOut(player.store, account: player.account) }
        var judged = world.judged(clockMoves: true)
        judged.trace.marks = players.flatMap(\.marks).sorted { $0.nanos < $1.nanos }
        judged.trace.cancelPoints = CancelPoint.points(
            judged.trace.calls, marks: judged.trace.marks, entries: judged.trace.entries)
        judged.trace.program = lines
        judged.trace.programValues = values
        return judged
    }
}
