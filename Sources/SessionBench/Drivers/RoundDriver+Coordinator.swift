import Foundation
import SessionContract
import SessionSync
import TokenServer

/// The coordinator's own calls: sign-ins, sign-outs and reads it makes between the crowds'
/// waves, each under the watchdog and judged like any caller's.
extension RoundDriver {
    /// Signs `account` in as its user in `slot` (0 or 1), timing it. Throws the sign-in's
    /// error; returns `false` if the store hung.
    mutating func signIn(_ account: Int, slot: Int, fetchToken: Bool = true) async throws(SessionError) -> Bool {
        let store = stores[account]
        let credentials = Credentials(subject: subjects[account][slot])
        let t0 = TokenServer.realNanoseconds()
        let result = await watched(.signIn, phase: "sign-in") { () async -> Result<Void, SessionError> in
            do throws(SessionError) { return .success(try await store.signIn(credentials)) } catch {
                return .failure(error)
            }
        }
        guard let result else { return false }
        let t1 = TokenServer.realNanoseconds()
        scanLedger()
        let family = server.ledger.entries.last { $0.call == .signIn && $0.sentAt >= t0 && $0.sentAt <= t1 }?.family
        if let family { accountOfFamily[family] = account }
        events.append(
            SessionEvent(
                account: account, kind: .signIn(slot: slot, family: family), startedNanos: t0, returnedNanos: t1))
        try result.get()
        outcome.latencies.record(.signIn, nanoseconds: t1 - t0)
        outcome.operations += 1
        signedInSlot[account] = slot
        previousToken[account] = nil
        currentToken[account] = nil
        if fetchToken { return await readCurrentToken(account, phase: "read after sign-in") != nil }
        return true
    }

    /// Signs `account` out, timing it; `false` if the store hung.
    mutating func signOut(_ account: Int) async -> Bool {
        let store = stores[account]
        let t0 = TokenServer.realNanoseconds()
        guard await watched(.signOut, phase: "sign-out", { await store.signOut() }) != nil else { return false }
        let t1 = TokenServer.realNanoseconds()
        events.append(SessionEvent(account: account, kind: .signOut, startedNanos: t0, returnedNanos: t1))
        outcome.latencies.record(.signOut, nanoseconds: t1 - t0)
        outcome.operations += 1
        currentToken[account] = nil
        return true
    }

    /// One `validToken()` of the coordinator's, judged like any caller's. `nil` if the store
    /// hung; otherwise the call (its outcome may be an error).
    mutating func readCurrentToken(_ account: Int, phase: String) async -> ObservedCall? {
        let store = stores[account]
        let subjects = self.subjects
        let time = self.time
        let observed = await watched(.read, phase: phase) { () async -> (ObservedCall, AccessToken?) in
            let startedAt = time.now
            let t0 = TokenServer.realNanoseconds()
            let result: Result<AccessToken, SessionError>
            do throws(SessionError) { result = .success(try await store.validToken()) } catch {
                result = .failure(error)
            }
            let t1 = TokenServer.realNanoseconds()
            let call = ObservedCall(
                caller: -1, account: account, kind: .read, phase: phase, startedAt: startedAt, startedNanos: t0,
                endedNanos: t1, outcome: result.map { ObservedCall.issued($0, subjects: subjects) }, wasCancelled: false
            )
            return (call, try? result.get())
        }
        guard let (call, token) = observed else { return nil }
        record([call])
        if let token {
            if token.generation != currentToken[account]?.generation { previousToken[account] = currentToken[account] }
            currentToken[account] = token
        }
        return call
    }

    /// After a storm: note the new current token; sign back in where the session was lost.
    /// `false` if the store hung.
    mutating func recover(after calls: [ObservedCall]) async -> Bool {
        for account in stores.indices {
            let outcomes = calls.filter { $0.account == account }.map(\.outcome)
            let lost = outcomes.contains { $0.failureValue == .refreshTokenRevoked || $0.failureValue == .signedOut }
            if lost {
                do { guard try await signIn(account, slot: signedInSlot[account]) else { return false } } catch {
                    outcome.failure = "sign-in after a lost session failed: \(error)"
                    return false
                }
            } else {
                guard let call = await readCurrentToken(account, phase: "read after the round") else { return false }
                if case .failure(let error) = call.outcome, error == .refreshTokenRevoked || error == .signedOut {
                    do { guard try await signIn(account, slot: signedInSlot[account]) else { return false } } catch {
                        outcome.failure = "sign-in after a lost session failed: \(error)"
                        return false
                    }
                }
            }
        }
        return true
    }

    /// Learns which family every newly issued generation belongs to.
    mutating func scanLedger() {
        let entries = server.ledger.entries
        for entry in entries.dropFirst(ledgerScanned) {
            if let generation = entry.issuedGeneration { familyOfGeneration[generation] = entry.family }
        }
        ledgerScanned = entries.count
    }

    /// Runs one call of the coordinator's own under the watchdog: a store that never
    /// answers becomes a hang report, never a stuck tool. `nil` when it timed out.
    mutating func watched<T: Sendable>(
        _ operation: OperationKind, phase: String, _ body: @escaping @Sendable () async -> T
    ) async -> T? {
        let latch = CompletionLatch<T>(expected: 1)
        Task {
            latch.enter()
            latch.finish(await body())
        }
        let deadline = ContinuousClock.now + runner.hangTimeout
        if let watch = watch {
            let server = self.server
            watch.expectBack(by: deadline) {
                Starvation(
                    phase: phase, stuckCallers: 1, ofCallers: 1, operation: operation,
                    detail: "the harness could not run: every thread of the cooperative pool is blocked; "
                        + Self.refreshStatus(server: server, since: max(0, server.ledger.entries.count - 8)))
            }
        }
        let value = await latch.wait(until: deadline)?.first ?? latch.partialResults.first
        watch?.back()
        guard let value else {
            outcome.hang = .init(
                stuckCallers: 1, ofCallers: 1, operation: operation, waitedSeconds: runner.hangTimeout.secondsValue,
                phase: phase, detail: refreshStatus())
            return nil
        }
        return value
    }
}
