import Foundation
import SessionContract
import SessionMeasurement
import SessionOracle
import SessionSync
import TokenServer

/// The coordinator's own calls: sign-ins, sign-outs and reads it makes between the crowds'
/// waves, each under the watchdog and judged like any caller's.
extension RoundDriver {
    /// Signs `account` in as its user in `slot` (0 or 1), timing it in the task that calls the
    /// store, and with `fetchToken` reads the token right after it returns, in the same task.
    /// Throws the sign-in's error; returns `false` if the store hung.
    mutating func signIn(_ account: Int, slot: Int, fetchToken: Bool = true) async throws(SessionError) -> Bool {
        let store = stores[account]
        let credentials = Credentials(subject: subjects[account][slot])
        let read = readsAfterFence(account, phase: "read right after sign-in", async: fetchToken && !server.gate.isHeld)
        guard
            let (t0, t1, result, reads) = await watched(.signIn, phase: "sign-in", { () async -> (Int64, Int64, Result<Void, SessionError>, [(ObservedCall, AccessToken?)]) in
                let t0 = TokenServer.realNanoseconds()
                let result: Result<Void, SessionError>
                do throws(SessionError) { result = .success(try await store.signIn(credentials)) } catch {
                    result = .failure(error)
                }
                let t1 = TokenServer.realNanoseconds()
                return (t0, t1, result, result.failureValue == nil ? await read() : [])
            })
        else { return false }
        let event = SessionEvent.signIn(
            account: account, slot: slot, from: t0, to: t1, error: result.failureValue, clockAt: time.now,
            ledger: server.ledger)
        if let family = event.family { accountOfFamily[family] = account }
        events.append(event)
        try result.get()
        if timesFences { outcome.latencies.record(.signIn, nanoseconds: t1 - t0) }
        outcome.operations += 1
        signedInSlot[account] = slot
        previousToken[account] = nil
        currentToken[account] = nil
        record(reads.map(\.0))
        if let token = reads.first(where: { $0.0.request == .validToken })?.1 { currentToken[account] = token }
        return true
    }

    /// Signs `account` out, timing it in the task that calls the store, and reads right after it
    /// returns, in the same task (the synchronous read too, where the store has one); `false` if
    /// the store hung.
    mutating func signOut(_ account: Int) async -> Bool {
        let store = stores[account]
        // Not `validToken()` while a refresh is held at the server: a store that kept the session
        // would wait on that refresh, and the coordinator that holds it with it.
        let read = readsAfterFence(account, phase: "read right after sign-out", async: !server.gate.isHeld)
        guard
            let (t0, t1, reads) = await watched(.signOut, phase: "sign-out", { () async -> (Int64, Int64, [(ObservedCall, AccessToken?)]) in
                let t0 = TokenServer.realNanoseconds()
                await store.signOut()
                let t1 = TokenServer.realNanoseconds()
                return (t0, t1, await read())
            })
        else { return false }
        events.append(
            SessionEvent(account: account, kind: .signOut, startedNanos: t0, returnedNanos: t1, clockAt: time.now))
        if timesFences { outcome.latencies.record(.signOut, nanoseconds: t1 - t0) }
        outcome.operations += 1
        currentToken[account] = nil
        record(reads.map(\.0))
        return true
    }

    /// The reads a sign-in or sign-out is followed by, in its own task: the synchronous read
    /// first, where the store has one, then (`async`) `validToken()`.
    func readsAfterFence(_ account: Int, phase: String, async: Bool) -> @Sendable () async -> [(ObservedCall, AccessToken?)] {
        let store = stores[account], subjects = self.subjects, clock = TokenClock.manual(time)
        let requests: [StoreCall] = (store is any SynchronousTokenReading ? [.currentToken] : []) + (async ? [.validToken] : [])
        return {
            var reads: [(ObservedCall, AccessToken?)] = []
            for request in requests {
                reads.append(
                    await request.perform(
                        on: store, caller: -1, account: account, kind: request.isSync ? .syncRead : .read, phase: phase,
                        clock: clock, subjects: subjects))
            }
            return reads
        }
    }

    /// One `validToken()` of the coordinator's, judged like any caller's. `nil` if the store
    /// hung; otherwise the call (its outcome may be an error).
    mutating func readCurrentToken(_ account: Int, phase: String) async -> ObservedCall? {
        guard let (call, token) = await coordinatorCall(.validToken, account: account, kind: .read, phase: phase)
        else { return nil }
        if let token {
            if token.generation != currentToken[account]?.generation { previousToken[account] = currentToken[account] }
            currentToken[account] = token
        }
        return call
    }

    /// The coordinator's own `currentToken()` of every account, for stores that offer it, judged
    /// like any call: right after an event returns, from the same task. `false` if the store hung.
    mutating func probeSynchronousRead(_ phase: String) async -> Bool {
        guard stores.first is any SynchronousTokenReading else { return true }
        for account in stores.indices {
            guard await coordinatorCall(.currentToken, account: account, kind: .syncRead, phase: phase) != nil else {
                return false
            }
        }
        return true
    }

    /// One call of the coordinator's, under the watchdog, judged like any caller's, with the token
    /// it got. `nil` if the store hung.
    mutating func coordinatorCall(_ request: StoreCall, account: Int, kind: OperationKind, phase: String) async
        -> (call: ObservedCall, token: AccessToken?)?
    {
        let store = stores[account]
        let subjects = self.subjects
        let clock = TokenClock.manual(time)
        guard
            let observed = await watched(kind, phase: phase, { () async -> (ObservedCall, AccessToken?) in
                await request.perform(
                    on: store, caller: -1, account: account, kind: kind, phase: phase, clock: clock, subjects: subjects)
            })
        else { return nil }
        record([observed.0])
        return observed
    }

    /// After a storm: note the new current token; sign back in where the session was lost.
    /// `false` if the store hung.
    mutating func recover(after calls: [ObservedCall]) async -> Bool {
        for account in stores.indices {
            let errors = calls.filter { $0.account == account }.compactMap(\.error)
            let lost = errors.contains { $0 == .refreshTokenRevoked || $0 == .signedOut }
            if errors.contains(.refreshTokenRevoked) {
                // The session is over: a read now gets nothing of it, however fresh its token.
                guard await readCurrentToken(account, phase: "read after the session was refused") != nil else {
                    return false
                }
            }
            if lost {
                do { guard try await signIn(account, slot: signedInSlot[account]) else { return false } } catch {
                    outcome.failure = "sign-in after a lost session failed: \(error)"
                    return false
                }
            } else {
                guard let call = await readCurrentToken(account, phase: "read after the round") else { return false }
                if let error = call.error, error == .refreshTokenRevoked || error == .signedOut {
                    do { guard try await signIn(account, slot: signedInSlot[account]) else { return false } } catch {
                        outcome.failure = "sign-in after a lost session failed: \(error)"
                        return false
                    }
                }
            }
        }
        return true
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
        let server = self.server
        watch.expectBack(by: deadline) {
            Starvation(
                phase: phase, stuckCallers: 1, ofCallers: 1, operation: operation,
                detail: "the harness could not run: every thread of the cooperative pool is blocked; "
                    + Self.refreshStatus(server: server, since: max(0, server.ledger.entries.count - 8)))
        }
        let value = await latch.wait(until: deadline)?.first ?? latch.partialResults.first
        watch.back()
        guard let value else {
            var detail = refreshStatus()
            if operation == .signOut || operation == .signIn, server.gate.waitingCount > 0 {
                // The round holds the refresh until the fence returns: the store waited on the network.
                detail += "; the round holds that refresh at the server until the \(operation == .signOut ? "sign-out" : "sign-in") "
                    + "returns, as a slow or unreachable server would: the store waited for the refresh in flight, "
                    + "where the contract discards a refresh that lands after the fence (its waiters get 'signed out')"
            }
            outcome.hang = .init(
                stuckCallers: 1, ofCallers: 1, operation: operation, waitedSeconds: runner.hangTimeout.secondsValue,
                phase: phase, detail: detail)
            return nil
        }
        return value
    }
}
