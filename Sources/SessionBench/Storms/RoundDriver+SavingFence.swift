import SessionContract
import SessionOracle
import SessionSync
import TokenServer

/// The round that ends a session while the store saves its refreshed grant.
extension RoundDriver {
    /// Callers wait on a held refresh; once it is answered and the store begins to save the new
    /// grant, the save is held open (``SaveHold``) and the session ends — a sign-out, or another
    /// user's sign-in — then the save goes on. Whatever the callers get, nothing of the ended
    /// session may be saved once the fence returned (I16): a store that checks its session under
    /// its lock and saves after letting go of it writes the ended session back over the fence's
    /// clear. Calls started after the fence returned get nothing of it. Played for stores that
    /// keep their session: the others have no save to time the fence into.
    mutating func savingFenceRound(round: Int, fence: Fence) async -> Bool {
        advancePastExpiry()
        server.setContext("round \(round) \(fence) while the refreshed grant is saved")
        let tasks = scenario.tasks
        let probes = max(stores.count, min(tasks, 8))
        let read: Plan = { _, _ in .validToken }
        guard
            let waiters = await heldWave(
                0..<tasks, kind: .refreshWait,
                phase: "round \(round) callers whose refresh is saved during the \(fence)",
                plan: read)
        else { return false }
        let holds = storages.map { $0?.holdNextSave() }
        server.gate.release()
        // A store that saves nothing of a refresh has no save to hold: the callers come back without one.
        let fenced = await endSessions(fence, holding: holds) { waiters.latch.finishedCount >= waiters.count }
        guard fenced, await probeSynchronousRead("round \(round) right after the \(fence) returned") else {
            return false
        }
        let early = launch(
            tasks..<(tasks + probes), kind: .read, phase: "round \(round) calls started after the \(fence) returned",
            plan: read)
        guard let parked = await collect([waiters], phase: "round \(round) after the \(fence)"),
            let first = await collect([early], phase: "round \(round) after the \(fence)")
        else { return false }
        // What the callers waited includes the hold, the harness's own: not the store's latency.
        record(parked, timed: false)
        record(first)
        return await afterFence(fence, round: round)
    }

    /// A sign-in whose grant the store is saving when the session ends: the sign-in (of the other
    /// user) is answered, and once the store begins to save its grant the save is held open
    /// (``SaveHold``) while the fence runs — a sign-out, or a sign-in of the user signed in before —
    /// then goes on. The fence overtakes the held sign-in: nothing of its session may be saved once
    /// the fence returned (I16). A store that checks under its lock that its sign-in is still
    /// current, then saves after letting go of the lock, writes the overtaken session over the
    /// fence's clear.
    mutating func savingSignInRound(round: Int, fence: Fence) async -> Bool {
        server.setContext("round \(round) \(fence) while a sign-in's grant is saved")
        let holds = storages.map { $0?.holdNextSave() }
        let signIns = stores.indices.map { startSignIn($0, slot: 1 - signedInSlot[$0]) }
        // A user switch signs the earlier user in again: the held sign-in was the other's.
        guard
            await endSessions(
                fence == .userSwitch ? .signInAgain : fence, holding: holds,
                until: {
                    signIns.allSatisfy(\.returned)
                })
        else { return false }
        for held in signIns {
            guard
                let event = await watched(
                    .signIn, phase: "round \(round) the sign-in whose save the \(fence) overtook",
                    { await held.task.value })
            else { return false }
            events.append(event)
        }
        guard await probeSynchronousRead("round \(round) after the sign-in whose save was held returned") else {
            return false
        }
        return await afterFence(fence, round: round)
    }

    /// Ends the sessions as `fence` says while each save `holds` caught is held open: first waits
    /// until every hold's save has begun, or `back` says the calls that would save are back without
    /// one (2 s at most: a store that hangs before its save is reported later, after a hang
    /// timeout); disarms the holds no save took (they must not hold the fence's own save); then the
    /// fence, untimed (its time includes the hold, the harness's doing), and the saves go on.
    /// `false` if the fence hung.
    private mutating func endSessions(_ fence: Fence, holding holds: [SaveHold?], until back: () -> Bool) async
        -> Bool
    {
        let deadline = ContinuousClock.now + min(runner.hangTimeout, .seconds(2))
        while holds.contains(where: { $0.map { !$0.hasBegun } ?? false }), !back(), ContinuousClock.now < deadline {
            await pause(.microseconds(100))
        }
        for (storage, hold) in zip(storages, holds) where hold?.hasBegun == false { storage?.cancelHold() }
        for hold in holds { hold?.fenceBegins() }
        timesFences = false
        let fenced = await endSessions(fence)
        timesFences = true
        for hold in holds { hold?.release() }
        return fenced
    }
}
