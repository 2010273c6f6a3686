import SessionContract
import TokenServer

/// The invariants checked after each storm, from the callers' outcomes and the ledger.
extension RoundState {
    mutating func check(_ calls: [RoundDriver.Call], ledgerEntries entries: [LedgerEntry], round: Int, ledgerStart: Int) {
        oracle.checkLedger(server.ledger, since: ledgerStart, context: "round \(round)")
        scanLedger()
        for account in stores.indices {
            let family = currentToken[account].flatMap { familyOfGeneration[$0.generation] }
            let attempts = entries.filter { $0.call == .refresh && $0.family == family && family != nil }
            let mine = calls.filter { $0.account == account && !$0.wasCancelled }
            var tally: [RoundDriver.Shared: Int] = [:]
            for call in mine { tally[Self.shared(call.outcome), default: 0] += 1 }

            // I2: with one refresh call, every waiter depended on it, so all must agree.
            if attempts.count == 1, tally.count > 1 {
                oracle.report(
                    .sameOutcome, "waiters of one refresh got different outcomes (round \(round))",
                    trace: [Oracle.describe(attempts[0])]
                        + tally.sorted { $0.value > $1.value }.map { "\($0.value) caller(s) got \($0.key)" })
            }
            for call in mine {
                if case .success(let issued) = call.outcome, issued.account != account {
                    oracle.report(
                        .noCrossUserLeak, "a caller of account \(account) got another account's token (round \(round))")
                }
            }
            if scenario.kind == .flakyServer {
                checkFailureShared(attempts: attempts, tally: tally, round: round)
            }
            if !calls.filter({ $0.wasCancelled }).isEmpty {
                checkCancellationIsolated(mine, faultsPossible: scenario.faults != .none, round: round)
            }
        }
    }

    /// I10: a failed refresh fails its waiters once; the next call may refresh; no storm.
    func checkFailureShared(attempts: [LedgerEntry], tally: [RoundDriver.Shared: Int], round: Int) {
        // A caller that reached the store just after a failure may start one more attempt;
        // beyond that, waiters are retrying on their own.
        if attempts.count > 2 {
            oracle.report(
                .failureSharedNotSticky, "\(attempts.count) refresh attempts for one expiry (round \(round)): a retry storm",
                trace: attempts.prefix(4).map(Oracle.describe))
        }
        let failures = tally.filter { if case .error(.refreshFailed) = $0.key { true } else { false } }
        if attempts.isEmpty, !failures.isEmpty, tally.count == failures.count {
            oracle.report(
                .failureSharedNotSticky,
                "callers got 'refresh failed' with no refresh attempt (round \(round)): the failure is sticky")
        }
    }

    /// I11: cancelling some waiters neither cancels nor poisons the refresh for the others.
    func checkCancellationIsolated(_ survivors: [RoundDriver.Call], faultsPossible: Bool, round: Int) {
        let cancelledByOthers = survivors.count { $0.outcome.failureValue == .cancelled }
        if cancelledByOthers > 0 {
            oracle.report(
                .cancellationIsolated,
                "\(cancelledByOthers) caller(s) that were not cancelled got 'cancelled' (round \(round))")
        }
        let poisoned = survivors.count { $0.outcome.failureValue == .refreshFailed }
        if !faultsPossible, poisoned > 0 {
            oracle.report(
                .cancellationIsolated,
                "\(poisoned) caller(s) that were not cancelled got 'refresh failed' from a healthy server (round \(round))")
        }
    }

    /// After a storm: note the new current token; sign back in where the session was lost.
    /// `false` if the store hung.
    mutating func recover(after calls: [RoundDriver.Call]) async -> Bool {
        for account in stores.indices {
            let outcomes = calls.filter { $0.account == account }.map(\.outcome)
            let lost = outcomes.contains { $0.failureValue == .refreshTokenRevoked || $0.failureValue == .signedOut }
            if lost {
                do { guard try await signIn(account, slot: signedInSlot[account]) else { return false } } catch {
                    outcome.failure = "sign-in after a lost session failed: \(error)"
                    return false
                }
            } else if outcomes.contains(where: { if case .success = $0 { true } else { false } }) {
                guard await refreshCurrentToken(account) else { return false }
            }
        }
        return true
    }

    static func shared(_ outcome: Result<RoundDriver.Issued, SessionError>) -> RoundDriver.Shared {
        switch outcome {
        case .success(let issued): .token(issued.generation)
        case .failure(let error): .error(error)
        }
    }
}

extension Result {
    var failureValue: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
