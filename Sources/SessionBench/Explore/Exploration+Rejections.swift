import SessionContract
import SessionOracle
import TokenServer

extension Exploration {
    /// The rounds of `401-storm`: one user signs in and a caller reads the token. Each round
    /// every caller reports a 401 for the token last handed out — from the second round, a caller
    /// in four (2, 6, …) for the one before it, which a store may answer at once or let join the
    /// refresh, never refresh for — and on odd rounds the token has also expired and odd callers
    /// read it instead, so a store's two refresh paths meet, while on even rounds, the token still
    /// fresh, one more caller reads it during the storm; then a few callers report 401s for
    /// the token the storm replaced, which must not reach the server. Judged: one refresh
    /// per storm (I1; I6 when a 401 for the replaced token refreshed again), the stale 401s (none
    /// reaches the server, each gets the current token), the contract's model over every call and
    /// sign-in, and the ledger.
    static func rejectionRounds(
        _ descriptor: StoreDescriptor, _ scenario: Scenario
    ) async -> (violations: [Violation], digest: ScheduleDigest, trace: StormTrace) {
        let world = ControlledWorld(descriptor, scenario, users: [Subject("explore-user")])
        let (time, server, store, log, oracle) = (world.time, world.server, world.store, world.log, world.oracle)
        guard await world.signIn() else { return world.judged(digested: false) }
        let reader = scenario.tasks
        guard case .success(var current) = await log.call(.validToken, on: store, caller: reader, phase: "signed in")
        else { return world.judged() }
        var older: AccessToken?
        for round in 0..<scenario.rounds {
            let racing = round % 2 == 1
            if racing { time.advance(by: scenario.tokenLifetime) }
            let what = racing ? "expiry with 401s" : "401 storm"
            server.setContext("round \(round) \(what)")
            let ledgerStart = server.ledger.entries.count
            let (rejected, stale) = (current, older)
            let storm = await withTaskGroup(of: AccessToken?.self) { group in
                // On the other rounds the token is fresh: one more caller reads it while the 401s
                // refresh, and may be given the token the storm replaces until the new one is out.
                if !racing {
                    group.addTask {
                        try? await log.call(.validToken, on: store, caller: reader, phase: "round \(round) \(what)")
                            .get()
                    }
                }
                for caller in 0..<scenario.tasks {
                    let reads = racing && caller % 2 == 1
                    let request: StoreCall =
                        reads ? .validToken : .tokenRejected(caller % 4 == 2 ? stale ?? rejected : rejected)
                    group.addTask {
                        try? await log.call(
                            request, on: store, caller: caller, kind: reads ? .refreshWait : .rejection,
                            phase: "round \(round) \(what)"
                        ).get()
                    }
                }
                return await group.reduce(into: [AccessToken]()) { if let token = $1 { $0.append(token) } }
            }
            let attempts = server.ledger.entries.dropFirst(ledgerStart).filter { $0.call == .refresh }
            oracle.checkOneRefresh(Array(attempts), round: round, what: what, released: nil, staleAfterSuccess: true)
            guard let newest = storm.max(by: { $0.generation < $1.generation }),
                newest.generation > rejected.generation
            else { break }
            (older, current) = (rejected, newest)
            // 401s for the replaced token, once the new one is out: answered from the store.
            server.setContext("round \(round) stale 401s")
            let (before, callsBefore) = (server.ledger.refreshCalls, log.calls.count)
            await withTaskGroup(of: Void.self) { group in
                for caller in 0..<min(scenario.tasks, 4) {
                    group.addTask {
                        _ = await log.call(
                            .tokenRejected(rejected), on: store, caller: caller, kind: .rejection,
                            phase: "round \(round) stale 401s")
                    }
                }
            }
            let refreshCalls = server.ledger.refreshCalls - before
            oracle.record(
                StormJudge.staleRejections(
                    .init(
                        calls: Array(log.calls.dropFirst(callsBefore)), stale: [rejected.generation],
                        current: [current.generation], refreshCalls: refreshCalls,
                        refreshes: Array(server.ledger.entries.filter { $0.call == .refresh }.suffix(refreshCalls))),
                    round: round))
        }
        server.setContext("sign-out")
        await log.signOut(store)
        return world.judged()
    }
}
