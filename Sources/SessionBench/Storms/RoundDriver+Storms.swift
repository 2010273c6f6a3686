import Foundation
import SessionContract
import SessionMeasurement
import SessionOracle
import TokenServer

/// Storms: expiries and 401s met by staggered arrivals, scripted faults, cancellations, the
/// scale storm.
extension RoundDriver {
    /// One expiry (or 401) met by callers in four waves: A before the refresh is sent, B
    /// while it is held in flight, C released with it (racing its landing), D after it
    /// landed. Against a healthy server every caller gets the one new token, from one
    /// refresh call per account.
    ///
    /// `rejecting`: callers report a 401 for the current token instead of reading;
    /// `racing`: the token has also expired and odd callers read while even ones report the
    /// 401, so both refresh paths of a store meet in one storm.
    mutating func staggeredStorm(round: Int, rejecting: Bool, racing: Bool) async -> Bool {
        let ledgerStart = server.ledger.entries.count
        let tasks = scenario.tasks
        let accounts = stores.count
        let aCount = min(tasks, max(accounts, tasks / 2))
        let bCount = min(tasks - aCount, tasks / 4)
        let probes = max(accounts, min(4, tasks))
        let rejected = currentToken
        let older = previousToken
        let kind: OperationKind = rejecting ? .rejection : .refreshWait
        let kindOf: @Sendable (Int) -> OperationKind = { caller in racing && caller % 2 == 1 ? .refreshWait : kind }
        let staleCallers = aCount..<(aCount + bCount)
        let plan: Plan = { account, caller in
            guard rejecting, !(racing && caller % 2 == 1), let token = rejected[account] else { return .validToken }
            // A few callers in flight hold a token older still: their 401 joins the refresh.
            if staleCallers.contains(caller), caller % 4 == 3, let stale = older[account] {
                return .tokenRejected(stale)
            }
            return .tokenRejected(token)
        }
        let what = racing ? "expiry with 401s" : rejecting ? "401 storm" : "expiry"
        guard await probeSynchronousRead("round \(round) \(what), before any caller asks") else { return false }
        guard
            let a = await heldWave(
                0..<aCount, kind: kind, kindOf: kindOf, phase: "round \(round) \(what), wave A (before the refresh)",
                plan: plan)
        else { return false }
        // The refresh is under way: the synchronous read has no token to give.
        guard await probeSynchronousRead("round \(round) \(what), while the refresh is held") else { return false }
        let b = launch(
            aCount..<(aCount + bCount), kind: kind, kindOf: kindOf,
            phase: "round \(round) \(what), wave B (while the refresh is in flight)", plan: plan)
        guard await entered(b) else { return false }
        await settle()
        let released = TokenServer.realNanoseconds()
        server.gate.release()
        let c = launch(
            (aCount + bCount)..<tasks, kind: kind, kindOf: kindOf,
            phase: "round \(round) \(what), wave C (as the refresh lands)", plan: plan)
        guard let storm = await collect([a, b, c], phase: "round \(round)") else { return false }
        let d = launch(
            tasks..<(tasks + probes), kind: kind, kindOf: kindOf,
            phase: "round \(round) \(what), wave D (after it landed)", plan: plan)
        guard let after = await collect([d], phase: "round \(round) wave D") else { return false }
        record(storm + after)
        guard await probeSynchronousRead("round \(round) \(what), after it landed") else { return false }
        countStorm(storm, ledgerStart: ledgerStart)
        for account in stores.indices {
            let attempts = refreshes(since: ledgerStart, account: account)
            observe(.refreshes(attempts: attempts, what: what, released: released, staleAfterSuccess: rejecting))
            observe(.waiters(storm.filter { $0.account == account }, attempts: attempts))
        }
        return await recover(after: storm + after)
    }

    /// A 401 storm on the current token (odd rounds: on an expired token while other callers
    /// read, so a store's two refresh paths race), then stale 401s that must not reach the
    /// server.
    mutating func rejectionRound(round: Int) async -> Bool {
        let racing = round % 2 == 1
        if racing { advancePastExpiry() }
        // Every tenth round an administrator has revoked the session: the 401 storm's refresh is
        // refused while the token itself has not expired, and nothing of the session may be
        // handed out after a caller was told (recover() signs in again).
        let revoked = round % 10 == 4
        if revoked {
            for account in stores.indices { server.revokeSessions(of: subjects[account][signedInSlot[account]]) }
        }
        guard await staggeredStorm(round: round, rejecting: true, racing: racing) else { return false }
        if revoked { return true }
        let stale = previousToken
        guard stale.allSatisfy({ $0 != nil }) else { return true }
        server.setContext("round \(round) stale 401s")
        let before = server.ledger.refreshCalls
        let probes = min(scenario.tasks, 8)
        let wave = launch(0..<probes, kind: .rejection, phase: "round \(round) stale 401s") { account, _ in
            .tokenRejected(stale[account]!)
        }
        guard let calls = await collect([wave], phase: "round \(round) stale 401s") else { return false }
        record(calls)
        let after = server.ledger.refreshCalls
        observe(
            .staleRejections(
                .init(
                    calls: calls, stale: stale.map { $0!.generation }, current: currentToken.map { $0?.generation },
                    refreshCalls: after - before, refreshes: Array(server.ledger.entries.suffix(after - before)))))
        return true
    }

    /// A storm against a server scripted to fail as `fault` says, then follow-up calls one
    /// at a time until the server's script is used up and one call succeeds.
    mutating func flakyRound(round: Int, fault: RoundFault) async -> Bool {
        advancePastExpiry()
        server.setContext("round \(round) (\(fault.rawValue))")
        let ledgerStart = server.ledger.entries.count
        server.scriptRefreshes(fault.script)
        defer { server.scriptRefreshes([]) }
        if fault == .revoked {
            for account in stores.indices { server.revokeSessions(of: subjects[account][signedInSlot[account]]) }
        }
        guard
            let wave = await heldWave(
                0..<scenario.tasks, kind: .refreshWait, phase: "round \(round) storm (\(fault.rawValue))",
                plan: { _, _ in .validToken })
        else { return false }
        guard let storm = await releaseAndCollect([wave], round: round, ledgerStart: ledgerStart) else { return false }
        for account in stores.indices {
            let attempts = refreshes(since: ledgerStart, account: account)
            observe(.waiters(storm.filter { $0.account == account }, attempts: attempts))
            observe(.failedRefreshes(attempts))
        }
        // Follow-ups: each must refresh again (the failure is not sticky) and, once the
        // scripted failures are spent, be served.
        var followUps: [ObservedCall] = []
        for account in stores.indices {
            for index in 0...fault.script.count {
                guard
                    let call = await readCurrentToken(
                        account, phase: "round \(round) follow-up \(index + 1) (\(fault.rawValue))")
                else { return false }
                followUps.append(call)
                if call.token != nil { break }
                if call.error == .refreshTokenRevoked || call.error == .signedOut { break }
            }
        }
        if followUps.contains(where: { $0.error == .refreshTokenRevoked }) {
            guard await afterRevocation(round: round, fault: fault) else { return false }
        }
        return await recover(after: storm + followUps)
    }

    /// The session was refused: a 401 for its last token and the synchronous read must bring
    /// nothing of it, and no server call; then, after an administrator's revocation, the other
    /// user signs in instead (after a lost answer, the same user signs in again).
    mutating func afterRevocation(round: Int, fault: RoundFault) async -> Bool {
        for account in stores.indices {
            if let token = currentToken[account] {
                guard
                    await coordinatorCall(
                        .tokenRejected(token), account: account, kind: .rejection,
                        phase: "round \(round) a 401 after the session was refused (\(fault.rawValue))") != nil
                else { return false }
            }
        }
        guard await probeSynchronousRead("round \(round) after the session was refused (\(fault.rawValue))") else {
            return false
        }
        guard fault == .revoked else { return true }
        for account in stores.indices {
            do {
                guard try await signIn(account, slot: 1 - signedInSlot[account]) else { return false }
            } catch {
                outcome.failure = "sign-in of the other user after a refused session failed: \(error)"
                return false
            }
        }
        return true
    }

    /// Callers wait on a held refresh while some are cancelled: the one whose call started
    /// the refresh in some rounds, never it in others, every one of them in a few. The
    /// server sees a cancelled refresh call as a dropped connection, so a refresh that dies
    /// with its initiator fails for everyone.
    mutating func cancellationRound(round: Int) async -> Bool {
        advancePastExpiry()
        let ledgerStart = server.ledger.entries.count
        let tasks = scenario.tasks
        enum Plan: String {
            case initiatorAndOthers = "initiator and others cancelled"
            case othersOnly = "others cancelled"
            case everyone = "every caller cancelled"
        }
        let plan: Plan = round % 5 == 4 ? .everyone : round % 2 == 0 ? .initiatorAndOthers : .othersOnly
        server.setContext("round \(round) (\(plan.rawValue))")
        var cancel: Set<Int>
        switch plan {
        case .initiatorAndOthers: cancel = chooseCancelled(1..<tasks, fraction: scenario.cancelFraction).union([0])
        case .othersOnly: cancel = chooseCancelled(1..<tasks, fraction: scenario.cancelFraction)
        case .everyone: cancel = Set(0..<tasks)
        }
        let read: RoundDriver.Plan = { _, _ in .validToken }
        // The initiator first and alone, so which caller started the refresh is known.
        guard
            let initiator = await heldWave(
                0..<1, kind: .refreshWait, phase: "round \(round) initiator", cancel: cancel, expectedRefreshes: 1,
                plan: read)
        else { return false }
        let others = launch(1..<tasks, kind: .refreshWait, phase: "round \(round) waiters", cancel: cancel, plan: read)
        guard await entered(others) else { return false }
        await settle()
        for caller in cancel {
            if caller == 0 { initiator.tasks[0].cancel() } else { others.tasks[caller - 1].cancel() }
        }
        await settle()
        // Every other round with the initiator cancelled, callers arrive after the cancellations,
        // the refresh still held: they join it, and nothing a cancellation cleared may start
        // another. (Not in every round: a store whose cancellation poisons the waiters must also
        // meet rounds where nobody comes after it.)
        let lateCount = plan == .initiatorAndOthers && round % 4 == 0 ? max(stores.count, min(tasks, 8)) : 0
        let late = launch(
            tasks..<(tasks + lateCount), kind: .refreshWait,
            phase: "round \(round) callers arriving after the cancellations", plan: read)
        guard await entered(late) else { return false }
        await settle()
        guard let storm = await releaseAndCollect([initiator, others, late], round: round, ledgerStart: ledgerStart)
        else {
            return false
        }
        for account in stores.indices {
            let survivors = storm.filter { $0.account == account && !$0.wasCancelled }
            observe(.waiters(survivors, attempts: refreshes(since: ledgerStart, account: account)))
        }
        var followUps: [ObservedCall] = []
        if plan == .everyone {
            // Nobody was left waiting; the refresh must still land for the next caller.
            for account in stores.indices {
                guard
                    let call = await readCurrentToken(
                        account, phase: "round \(round) first call after every waiter was cancelled")
                else { return false }
                followUps.append(call)
            }
        }
        return await recover(after: storm.filter { !$0.wasCancelled } + followUps)
    }

    /// One storm of the scale scenario's crowd, measuring the live memory each waiter holds.
    mutating func scaleStorm(round: Int) async -> Bool {
        let ledgerStart = server.ledger.entries.count
        let tasks = scenario.tasks
        let allocationsBefore = memory?.begin()
        defer { _ = memory?.end() }
        let liveBefore = memory?.liveBytes()
        guard
            let wave = await heldWave(
                0..<tasks, kind: .refreshWait, phase: "round \(round) storm",
                plan: { _, _ in .validToken })
        else { return false }
        if let liveBefore, let memory, let callerBytes = outcome.callerBytesPerWaiter {
            // Parked callers allocate nothing more: once live memory stops moving, every caller
            // is parked behind the held refresh, and what is alive now is theirs.
            var previous = memory.liveBytes()
            var steadyReadings = 0
            let deadline = ContinuousClock.now + runner.hangTimeout
            while steadyReadings < 3, ContinuousClock.now < deadline {
                await pause(.milliseconds(10))
                let current = memory.liveBytes()
                steadyReadings = current == previous ? steadyReadings + 1 : 0
                previous = current
            }
            let perCaller = Double(Int64(previous) - Int64(liveBefore)) / Double(tasks)
            outcome.storeBytesPerWaiter = max(0, perCaller - callerBytes)
        }
        guard
            let calls = await releaseAndCollect(
                [wave], round: round, ledgerStart: ledgerStart, allocationsSince: allocationsBefore)
        else { return false }
        for account in stores.indices {
            let attempts = refreshes(since: ledgerStart, account: account)
            observe(.refreshes(attempts: attempts, what: "expiry", released: nil, staleAfterSuccess: false))
            observe(.waiters(calls.filter { $0.account == account }, attempts: attempts))
        }
        return await recover(after: calls)
    }

    /// Lets the held refresh go, collects the storm's callers, records and counts them; with
    /// `allocationsSince`, counts the storm's allocations up to the last caller's return (the
    /// checks that follow are the harness's).
    mutating func releaseAndCollect(
        _ waves: [Wave], round: Int, ledgerStart: Int, allocationsSince: AllocationCounter.Snapshot? = nil
    ) async -> [ObservedCall]? {
        server.gate.release()
        guard let calls = await collect(waves, phase: "round \(round)") else { return nil }
        countAllocations(since: allocationsSince, callers: calls.count)
        await refreshesAnswered()
        record(calls)
        countStorm(calls, ledgerStart: ledgerStart)
        return calls
    }

    mutating func countStorm(_ calls: [ObservedCall], ledgerStart: Int) {
        outcome.storms += stores.count
        outcome.stormCallers += calls.count
        outcome.stormRefreshCalls += server.ledger.entries.dropFirst(ledgerStart).count { $0.call == .refresh }
    }

}
