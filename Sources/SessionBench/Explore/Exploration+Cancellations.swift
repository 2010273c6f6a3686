import SessionContract
import SessionOracle
import TokenServer

extension Exploration {
    /// The rounds of `cancellation-storm`: one user signs in; each round the token expires, every
    /// caller asks for a token, and one more task cancels some of them at a point the schedule
    /// picks — before a caller asked, while it waits on the refresh, after it was answered. The first
    /// round of three cancels callers 0 and 2 (the schedule decides whether either started the
    /// refresh), the second every caller, the third (`--rounds 3` or more) caller 1, each cancel
    /// from a task of its own, so another job may run between two of them; caller 2 reports a 401
    /// for the last token handed out instead of asking, so a cancellation meets a refresh a 401
    /// started as well as one an expiry did; then one caller asks again, and must get a token. Judged:
    /// the contract's model over every call (`cancelled` only for a cancelled caller, I11; every
    /// other caller a valid token from a healthy server), the ledger, and no hang (a refresh a
    /// cancellation left stuck is a deadlock here).
    static func cancellationRounds(
        _ descriptor: StoreDescriptor, _ scenario: Scenario
    ) async -> (violations: [Violation], digest: ScheduleDigest, trace: StormTrace) {
        let world = ControlledWorld(descriptor, scenario, users: [Subject("explore-user")])
        let (time, server, store, log) = (world.time, world.server, world.store, world.log)
        guard await world.signIn() else { return world.judged(digested: false) }
        let reader = scenario.tasks
        guard case .success(var last) = await log.call(.validToken, on: store, caller: reader, phase: "signed in")
        else { return world.judged() }
        for round in 0..<scenario.rounds {
            time.advance(by: scenario.tokenLifetime)
            let cancel: Set<Int> =
                round % 3 == 1 ? Set(0..<scenario.tasks) : round % 3 == 0 ? [0, 2] : [1]
            server.setContext("round \(round)")
            let rejected = last
            let callers = (0..<scenario.tasks).map { caller in
                let rejects = caller == 2
                return Task {
                    _ = await log.call(
                        rejects ? .tokenRejected(rejected) : .validToken, on: store, caller: caller,
                        kind: rejects ? .rejection : .refreshWait, phase: "round \(round)",
                        cancelled: cancel.contains(caller))
                }
            }
            let cancellers = cancel.sorted().filter(callers.indices.contains).map { caller in
                Task {
                    // A cancellation runs the store's handler, and whether it lands before or after
                    // a step of the store's decides what that step sees (`dfs`'s reduction).
                    ControlledExecution.touch(StepFootprint(store: true))
                    callers[caller].cancel()
                }
            }
            for canceller in cancellers { await canceller.value }
            for caller in callers { await caller.value }
            server.setContext("round \(round) after the cancellations")
            let after = await log.call(
                .validToken, on: store, caller: reader, kind: .refreshWait,
                phase: "round \(round) after the cancellations")
            if case .success(let token) = after { last = token }
        }
        server.setContext("sign-out")
        await log.signOut(store)
        return world.judged()
    }
}
