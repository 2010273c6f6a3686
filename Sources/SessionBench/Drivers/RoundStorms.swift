import Foundation
import SessionContract
import TokenServer

/// The fault a flaky round scripts into the server's next refreshes.
enum RoundFault: String, Sendable, CaseIterable {
    case healthy
    /// The storm's refresh fails with a transient error; the next call must refresh again.
    case transient
    /// The storm's refresh times out.
    case timeout
    /// The storm's refresh rotates the token but the answer is lost: the retry is a reuse,
    /// and the server ends the session (the one way a correct client can be logged out).
    case lostResponse
    /// The storm's refresh and the next two fail: waiters must not retry on their own.
    case outage
    /// The storm's refresh fails, and so does the next call's.
    case backToBack

    /// Scripted answers: the storm's refresh first, then the follow-up calls'.
    var script: [FaultModel.Fault?] {
        switch self {
        case .healthy: []
        case .transient: [.transientFailure]
        case .timeout: [.timeout]
        case .lostResponse: [.lostResponse]
        case .outage: [.transientFailure, .transientFailure, .transientFailure]
        case .backToBack: [.transientFailure, .transientFailure]
        }
    }

    /// A seeded order of faults for `rounds` rounds, in proportion to `faults`' rates, with
    /// every fault class the rates name present at least once when there are enough rounds.
    static func plan(rounds: Int, faults: FaultModel, random: inout SeededRandom) -> [RoundFault] {
        func share(_ rate: Double) -> Int { rate > 0 ? max(1, Int((Double(rounds) * rate).rounded())) : 0 }
        var classes: [(RoundFault, Int)] = [
            (.transient, share(faults.transientFailureRate)), (.timeout, share(faults.timeoutRate)),
            (.outage, faults.transientFailureRate > 0 ? max(1, rounds / 10) : 0),
            (.backToBack, faults.transientFailureRate > 0 ? max(1, rounds / 10) : 0),
            (.lostResponse, share(faults.lostResponseRate)),
        ]
        // One of each class first, then the rest of each share, then healthy rounds.
        var deck: [RoundFault] = []
        for index in classes.indices where classes[index].1 > 0 {
            deck.append(classes[index].0)
            classes[index].1 -= 1
        }
        for (fault, count) in classes { deck += repeatElement(fault, count: count) }
        deck = Array(deck.prefix(rounds))
        deck += repeatElement(.healthy, count: rounds - deck.count)
        deck.shuffle(using: &random)
        return deck
    }
}

/// Expiry storms: staggered arrivals, scripted faults, cancellations, the scale storm.
extension RoundState {
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
        let tasks = scenario.tasks, accounts = stores.count
        let aCount = min(tasks, max(accounts, tasks / 2))
        let bCount = min(tasks - aCount, tasks / 4)
        let probes = max(accounts, min(4, tasks))
        let rejected = currentToken
        let kind: OperationKind = rejecting ? .rejection : .refreshWait
        let kindOf: @Sendable (Int) -> OperationKind = { caller in racing && caller % 2 == 1 ? .refreshWait : kind }
        let body: Body = { store, account, caller throws(SessionError) in
            if rejecting, let token = rejected[account], !(racing && caller % 2 == 1) {
                return try await store.tokenRejected(token)
            }
            return try await store.validToken()
        }
        let what = racing ? "expiry with 401s" : rejecting ? "401 storm" : "expiry"
        guard let a = await heldWave(0..<aCount, kind: kind, kindOf: kindOf, phase: "round \(round) \(what), wave A (before the refresh)", body: body)
        else { return false }
        let b = launch(
            aCount..<(aCount + bCount), kind: kind, kindOf: kindOf,
            phase: "round \(round) \(what), wave B (while the refresh is in flight)", body: body)
        guard await entered(b) else { return false }
        await settle()
        let released = TokenServer.realNanoseconds()
        server.gate.release()
        let c = launch((aCount + bCount)..<tasks, kind: kind, kindOf: kindOf, phase: "round \(round) \(what), wave C (as the refresh lands)", body: body)
        guard let storm = await collect([a, b, c], phase: "round \(round)") else { return false }
        let d = launch(tasks..<(tasks + probes), kind: kind, kindOf: kindOf, phase: "round \(round) \(what), wave D (after it landed)", body: body)
        guard let after = await collect([d], phase: "round \(round) wave D") else { return false }
        record(storm + after)
        countStorm(storm, ledgerStart: ledgerStart)
        for account in stores.indices {
            let attempts = refreshes(since: ledgerStart, account: account)
            checkOneRefresh(attempts, round: round, what: what, released: released, staleAfterSuccess: rejecting)
            checkSameOutcome(storm.filter { $0.account == account }, attempts: attempts, round: round)
            if rejecting, let token = rejected[account] {
                checkRejectionRefreshed((storm + after).filter { $0.account == account && $0.kind == .rejection }, rejected: token)
            }
        }
        return await recover(after: storm + after)
    }

    /// A storm against a server scripted to fail as `fault` says, then follow-up calls one
    /// at a time until the server's script is used up and one call succeeds.
    mutating func flakyRound(round: Int, fault: RoundFault) async -> Bool {
        time.advance(by: scenario.tokenLifetime)
        server.setContext("round \(round) (\(fault.rawValue))")
        let ledgerStart = server.ledger.entries.count
        server.scriptRefreshes(fault.script)
        defer { server.scriptRefreshes([]) }
        guard
            let wave = await heldWave(0..<scenario.tasks, kind: .refreshWait, phase: "round \(round) storm (\(fault.rawValue))", body: {
                store, _, _ throws(SessionError) in try await store.validToken()
            })
        else { return false }
        guard let storm = await releaseAndCollect([wave], round: round, ledgerStart: ledgerStart) else { return false }
        for account in stores.indices {
            let attempts = refreshes(since: ledgerStart, account: account)
            checkSameOutcome(storm.filter { $0.account == account }, attempts: attempts, round: round)
            checkNoRetryStorm(attempts, round: round)
        }
        // Follow-ups: each must refresh again (the failure is not sticky) and, once the
        // scripted failures are spent, be served.
        var followUps: [ObservedCall] = []
        for account in stores.indices {
            for index in 0...fault.script.count {
                guard let call = await readCurrentToken(account, phase: "round \(round) follow-up \(index + 1) (\(fault.rawValue))")
                else { return false }
                followUps.append(call)
                if case .success = call.outcome { break }
                if call.error == .refreshTokenRevoked || call.error == .signedOut { break }
            }
        }
        return await recover(after: storm + followUps)
    }

    /// Callers wait on a held refresh while some are cancelled: the one whose call started
    /// the refresh in some rounds, never it in others, every one of them in a few. The
    /// server sees a cancelled refresh call as a dropped connection, so a refresh that dies
    /// with its initiator fails for everyone.
    mutating func cancellationRound(round: Int) async -> Bool {
        time.advance(by: scenario.tokenLifetime)
        let ledgerStart = server.ledger.entries.count
        let tasks = scenario.tasks
        enum Plan: String { case initiatorAndOthers = "initiator and others cancelled", othersOnly = "others cancelled", everyone = "every caller cancelled" }
        let plan: Plan = round % 5 == 4 ? .everyone : round % 2 == 0 ? .initiatorAndOthers : .othersOnly
        server.setContext("round \(round) (\(plan.rawValue))")
        var cancel: Set<Int>
        switch plan {
        case .initiatorAndOthers: cancel = chooseCancelled(1..<tasks, fraction: scenario.cancelFraction).union([0])
        case .othersOnly: cancel = chooseCancelled(1..<tasks, fraction: scenario.cancelFraction)
        case .everyone: cancel = Set(0..<tasks)
        }
        let body: Body = { store, _, _ throws(SessionError) in try await store.validToken() }
        // The initiator first and alone, so which caller started the refresh is known.
        guard
            let initiator = await heldWave(
                0..<1, kind: .refreshWait, phase: "round \(round) initiator", cancel: cancel, expectedRefreshes: 1, body: body)
        else { return false }
        let others = launch(1..<tasks, kind: .refreshWait, phase: "round \(round) waiters", cancel: cancel, body: body)
        guard await entered(others) else { return false }
        await settle()
        for caller in cancel {
            if caller == 0 { initiator.tasks[0].cancel() } else { others.tasks[caller - 1].cancel() }
        }
        await settle()
        guard let storm = await releaseAndCollect([initiator, others], round: round, ledgerStart: ledgerStart) else {
            return false
        }
        for account in stores.indices {
            let survivors = storm.filter { $0.account == account && !$0.wasCancelled }
            checkSameOutcome(survivors, attempts: refreshes(since: ledgerStart, account: account), round: round)
        }
        var followUps: [ObservedCall] = []
        if plan == .everyone {
            // Nobody was left waiting; the refresh must still land for the next caller.
            for account in stores.indices {
                guard let call = await readCurrentToken(account, phase: "round \(round) first call after every waiter was cancelled")
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
            let wave = await heldWave(0..<tasks, kind: .refreshWait, phase: "round \(round) storm", body: {
                store, _, _ throws(SessionError) in try await store.validToken()
            })
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
            let calls = await releaseAndCollect([wave], round: round, ledgerStart: ledgerStart, allocationsSince: allocationsBefore)
        else { return false }
        for account in stores.indices {
            let attempts = refreshes(since: ledgerStart, account: account)
            checkOneRefresh(attempts, round: round, what: "expiry", released: nil)
            checkSameOutcome(calls.filter { $0.account == account }, attempts: attempts, round: round)
        }
        return await recover(after: calls)
    }

    // MARK: Checks of one storm

    /// The refresh calls of `account` the server received since ledger position `start`.
    func refreshes(since start: Int, account: Int) -> [LedgerEntry] {
        server.ledger.entries.dropFirst(start).filter { $0.call == .refresh && accountOfFamily[$0.family] == account }
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

    /// I1: against a healthy server, one expiry costs one refresh call per account.
    ///
    /// `staleAfterSuccess`: the storm's 401s were all for the token the first refresh replaced,
    /// so a refresh sent after it succeeded is a stale 401 refreshing (I6). (A caller that
    /// refreshes again after waiting is shown as I1 by the expiry storm, which has no 401s.)
    func checkOneRefresh(
        _ attempts: [LedgerEntry], round: Int, what: String, released: Int64?, staleAfterSuccess: Bool = false
    ) {
        guard attempts.count > 1, attempts.allSatisfy({ !$0.isPassingFailure || $0.outcome == .dropped }) else { return }
        let first = attempts[0]
        if staleAfterSuccess, first.deliveredGrant, let answered = first.respondedAt,
            attempts.dropFirst().allSatisfy({ $0.sentAt >= answered })
        {
            oracle.report(
                .staleRejectionDoesNotRefresh,
                "\(attempts.count - 1) more refresh call(s) after the 401 storm's refresh had succeeded: 401s for the replaced token refreshed again (round \(round))",
                trace: attempts.prefix(4).map(Oracle.describe))
            return
        }
        let trace = attempts.prefix(4).map { entry -> String in
            var line = Oracle.describe(entry)
            if entry.index != first.index, let answered = first.respondedAt {
                let gap = Double(entry.sentAt - answered) / 1e6
                line += gap >= 0
                    ? String(format: ", sent %.3fms after the first refresh was answered", gap)
                    : String(format: ", sent while the first refresh was in flight (%.3fms before it was answered)", -gap)
            } else if let released {
                line += String(format: ", sent %.3fms before the held refresh was released", Double(released - entry.sentAt) / 1e6)
            }
            return line
        }
        oracle.report(
            .singleFlight, "\(attempts.count) refresh calls for one \(what) against a healthy server (round \(round))",
            trace: trace)
    }

    /// I2: with one refresh call, every waiter depended on it, so all must agree.
    func checkSameOutcome(_ calls: [ObservedCall], attempts: [LedgerEntry], round: Int) {
        guard attempts.count == 1, let answered = attempts[0].respondedAt else { return }
        var tally: [ObservedCall.Shared: [ObservedCall]] = [:]
        // The waiters: callers still in the store when the refresh was answered.
        for call in calls where !call.wasCancelled && call.startedNanos <= answered && call.endedNanos >= answered {
            tally[ObservedCall.Shared(call.outcome), default: []].append(call)
        }
        guard tally.count > 1 else { return }
        oracle.report(
            .sameOutcome, "waiters of one refresh got different outcomes (round \(round))",
            trace: [Oracle.describe(attempts[0])]
                + tally.sorted { $0.value.count > $1.value.count }.map {
                    "\($0.value.count) caller(s) got \($0.key), e.g. \($0.value[0].phase) caller \($0.value[0].caller)"
                })
    }

    /// I10: waiters of a failed refresh fail together; they do not each retry. A caller that
    /// reached the store only after the failure may start one more attempt.
    func checkNoRetryStorm(_ attempts: [LedgerEntry], round: Int) {
        let success = attempts.firstIndex(where: \.deliveredGrant)
        let beforeSuccess = attempts.prefix(upTo: success ?? attempts.count)
        if beforeSuccess.count > 2 {
            oracle.report(
                .failureSharedNotSticky,
                "\(beforeSuccess.count) refresh attempts while one storm of callers waited (round \(round)): a retry storm",
                trace: beforeSuccess.prefix(4).map(Oracle.describe))
        }
        if let success, success < attempts.count - 1 {
            oracle.report(
                .singleFlight, "the store refreshed again after a refresh had succeeded, in one expiry (round \(round))",
                trace: attempts[success...].prefix(4).map(Oracle.describe))
        }
    }

    /// I6: a 401 for the token the store holds must bring a newer one, never the same again.
    func checkRejectionRefreshed(_ calls: [ObservedCall], rejected: AccessToken) {
        for call in calls {
            guard let issued = call.token, issued.generation <= rejected.generation else { continue }
            oracle.report(
                .staleRejectionDoesNotRefresh,
                "\(call.phase): a 401 for the current token (generation \(rejected.generation)) returned generation \(issued.generation): the request would fail again",
                trace: ["caller \(call.caller) reported the 401; no newer token came back"])
            return
        }
    }
}
