import SessionContract
import SessionOracle
import TokenServer

extension Exploration {
    /// The flaky rounds of `flaky-server`: one user signs in; each round the token expires and the
    /// server answers the round's refreshes with a fault the schedule picks — none, a transient
    /// error, a timeout, a lost answer (the server rotated, the client never heard), an outage of
    /// three failures, two back to back, a revocation, an access token expired on arrival — while
    /// every caller asks, and, as the schedule picks, one more task signs out or signs the other
    /// user in at a point it picks (a failing refresh must not bring an ended session back); then
    /// follow-up calls, one at a time — the first a 401 for the last token, as the schedule picks —
    /// until one is served, the session is refused, or the fault's script is spent (a failure must
    /// not be sticky). A refused or signed-out session signs in again: the other user after a
    /// revocation, the same one otherwise. Judged like every exploration, against a server that
    /// fails: the contract's model over every call (waiters of one refresh share its outcome, I2; a
    /// failure is not kept, I10; nothing of a session after its fence, I8, I9) and the ledger (the
    /// retry a lost answer forces is excused).
    static func flakyRounds(
        _ descriptor: StoreDescriptor, _ scenario: Scenario
    ) async -> (violations: [Violation], digest: ScheduleDigest, trace: StormTrace) {
        let world = ControlledWorld(
            descriptor, scenario, users: [Subject("explore-user"), Subject("explore-other-user")])
        let (time, server, store, log, users) = (world.time, world.server, world.store, world.log, world.users)
        guard await world.signIn() else { return world.judged(digested: false, healthyServer: false) }
        var signedIn = 0
        var last: AccessToken?
        let faults = RoundFault.allCases
        for round in 0..<scenario.rounds {
            time.advance(by: scenario.tokenLifetime)
            let fault = faults[ControlledExecution.choose(faults.count)]
            // 0: no fence; 1: a sign-out, 2: the other user's sign-in, at a point the schedule picks.
            let fence = ControlledExecution.choose(3)
            // Whether the follow-ups report a 401 for the last token rather than ask for one.
            let rejecting = last != nil && ControlledExecution.choose(2) == 1
            server.setContext("round \(round) (\(fault.rawValue))")
            server.scriptRefreshes(fault.script)
            if fault == .revoked { server.revokeSessions(of: users[signedIn]) }
            let other = 1 - signedIn
            let handed = await withTaskGroup(of: AccessToken?.self) { group in
                for caller in 0..<scenario.tasks {
                    group.addTask {
                        try? await log.call(.validToken, on: store, caller: caller, phase: "round \(round)").get()
                    }
                }
                if fence != 0 {
                    group.addTask {
                        if fence == 1 {
                            await log.signOut(store)
                        } else {
                            try? await log.signIn(users[other], on: store)
                        }
                        return try? await log.call(
                            .validToken, on: store, caller: scenario.tasks + 1, phase: "round \(round) after the fence"
                        ).get()
                    }
                }
                return await group.reduce(into: [AccessToken]()) { if let token = $1 { $0.append(token) } }
            }
            if fence == 2 { signedIn = other }
            last = handed.max { $0.generation < $1.generation } ?? last
            var refused = fence == 1
            for index in 0...fault.script.count where !refused {
                let request: StoreCall = rejecting && index == 0 ? .tokenRejected(last!) : .validToken
                let answer = await log.call(
                    request, on: store, caller: scenario.tasks, kind: rejecting && index == 0 ? .rejection : .read,
                    phase: "round \(round) follow-up \(index + 1)")
                if case .failure(let error) = answer, error == .refreshTokenRevoked || error == .signedOut {
                    refused = true
                }
                if let token = try? answer.get() {
                    last = token
                    break
                }
            }
            server.scriptRefreshes([])
            guard refused else { continue }
            if fault == .revoked, fence != 1 { signedIn = 1 - signedIn }
            server.setContext("round \(round) sign-in")
            do throws(SessionError) { try await log.signIn(users[signedIn], on: store) } catch { break }
            last = nil
        }
        server.setContext("sign-out")
        await log.signOut(store)
        return world.judged(healthyServer: false)
    }
}
