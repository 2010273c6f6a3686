import SessionContract
import SessionOracle
import Synchronization
import TokenServer

/// The rounds where a sign-in is held at the server and overtaken by a sign-out or another sign-in.
extension RoundDriver {
    /// A sign-in held at the server while the session ends another way: the same user signs out
    /// (`overtaking: .signOut`), or another sign-in starts (`.userSwitch`: the first user again).
    /// In turn, the later event returns first, or (with `bothHeld`) a sign-in after the sign-out,
    /// or the later sign-in, is held too and the earlier one is answered while it is under way.
    /// The held sign-in is overtaken either way: its grant must never be handed out; the session
    /// is the later event's.
    mutating func heldSignInRound(round: Int, overtaking: Fence, bothHeld: Bool) async -> Bool {
        server.setContext("round \(round) a sign-in overtaken by a \(overtaking)")
        let gate = server.signInGate
        for account in stores.indices {
            gate.hold()
            let earlierSlot = overtaking == .signOut ? signedInSlot[account] : 1 - signedInSlot[account]
            let laterSlot = signedInSlot[account]
            let held = startSignIn(account, slot: earlierSlot)
            guard await arrive(at: gate, count: 1, unless: held) else { return false }
            if overtaking == .signOut {
                guard await signOut(account) else {
                    gate.release()
                    return false
                }
            }
            if bothHeld {
                // The later sign-in waits at the server too; the earlier one is answered first.
                let waiting = gate.waitingCount
                let later = startSignIn(account, slot: laterSlot)
                guard await arrive(at: gate, count: waiting + 1, unless: later) else { return false }
                // The earlier sign-in goes on (its store may ask the server more than once: new
                // calls pass before it is let through); the later one stays held until the
                // earlier has returned.
                gate.admitNew()
                gate.releaseFirst()
                guard let event = await watched(.signIn, phase: "round \(round) the overtaken sign-in", { await held.task.value })
                else {
                    gate.release()
                    return false
                }
                events.append(event)
                guard await probeSynchronousRead("round \(round) the overtaken sign-in answered, the later one held")
                else {
                    gate.release()
                    return false
                }
                gate.release()
                guard let laterEvent = await watched(.signIn, phase: "round \(round) the later sign-in", { await later.task.value })
                else { return false }
                events.append(laterEvent)
                if laterEvent.error == nil { signedInSlot[account] = laterSlot }
            } else {
                gate.admitNew()
                if overtaking != .signOut {
                    do { guard try await signIn(account, slot: laterSlot) else { return false } } catch {
                        outcome.failure = "a sign-in the server granted failed: \(error)"
                        gate.release()
                        return false
                    }
                }
                guard await probeSynchronousRead("round \(round) right after the \(overtaking), a sign-in still held")
                else {
                    gate.release()
                    return false
                }
                gate.release()
                guard let event = await watched(.signIn, phase: "round \(round) the overtaken sign-in", { await held.task.value })
                else { return false }
                events.append(event)
            }
            guard await readCurrentToken(account, phase: "round \(round) after the overtaken sign-in returned") != nil,
                await probeSynchronousRead("round \(round) after the overtaken sign-in returned")
            else { return false }
        }
        // Back to a known session: after a sign-out with nothing after it, sign in again.
        return overtaking == .signOut && !bothHeld ? await afterFence(.signOut, round: round)
            : await afterFence(.userSwitch, round: round)
    }

    /// Waits until `count` calls wait at `gate`, or `signIn` has returned without (a store that
    /// did not ask the server: what it answered is judged like any sign-in); `false` (a hang) if
    /// neither happens within the hang timeout.
    mutating func arrive(at gate: RefreshGate, count: Int, unless signIn: HeldSignIn) async -> Bool {
        let deadline = ContinuousClock.now + runner.hangTimeout
        while gate.waitingCount < count, !signIn.returned, ContinuousClock.now < deadline {
            await pause(.microseconds(100))
        }
        guard gate.waitingCount >= count || signIn.returned else {
            gate.release()
            outcome.hang = .init(
                stuckCallers: 1, ofCallers: 1, operation: .signIn, waitedSeconds: runner.hangTimeout.secondsValue,
                phase: "a sign-in never reached the server",
                detail: "the store's signIn neither called the server nor returned (\(gate.waitingCount) of \(count) sign-in(s) waiting)")
            return false
        }
        return true
    }

    /// A sign-in in a task of its own, and whether it has returned.
    struct HeldSignIn: Sendable {
        let task: Task<SessionEvent, Never>
        let done: Flag
        var returned: Bool { done.value.load(ordering: .acquiring) }

        final class Flag: Sendable { let value = Atomic(false) }
    }

    /// A sign-in of `account`'s user `slot` in a task of its own, recorded when it returns.
    func startSignIn(_ account: Int, slot: Int) -> HeldSignIn {
        let store = stores[account], server = self.server, time = self.time
        let credentials = Credentials(subject: subjects[account][slot])
        let done = HeldSignIn.Flag()
        let task = Task {
            defer { done.value.store(true, ordering: .releasing) }
            let t0 = TokenServer.realNanoseconds()
            let at = time.now
            var failure: SessionError?
            do throws(SessionError) { try await store.signIn(credentials) } catch { failure = error }
            return SessionEvent.signIn(
                account: account, slot: slot, from: t0, to: TokenServer.realNanoseconds(), error: failure, clockAt: at,
                ledger: server.ledger)
        }
        return HeldSignIn(task: task, done: done)
    }
}
