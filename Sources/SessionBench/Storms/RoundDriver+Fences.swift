import SessionContract
import SessionOracle
import SessionSync
import Synchronization
import TokenServer

/// Rounds that end a session: sign-out, or another user's sign-in.
extension RoundDriver {

    /// Callers wait on a held refresh; the session ends (sign-out, or another user signs in)
    /// before it lands. The waiters must get `signedOut` — never a token of the ended
    /// session — and calls started after the fence returned, before and after the discarded
    /// refresh lands, must get nothing of it.
    mutating func inFlightFenceRound(round: Int, fence: Fence) async -> Bool {
        advancePastExpiry()
        server.setContext("round \(round) \(fence) with a refresh in flight")
        let tasks = scenario.tasks
        let probes = max(stores.count, min(tasks, 8))
        let ended = endingFamilies()
        let read: Plan = { _, _ in .validToken }
        guard
            let waiters = await heldWave(
                0..<tasks, kind: .refreshWait, phase: "round \(round) waiters of the refresh the \(fence) discards",
                plan: read)
        else { return false }
        let fenceStarted = TokenServer.realNanoseconds()
        guard await endSessions(fence) else {
            server.gate.release()
            return false
        }
        guard await probeSynchronousRead("round \(round) right after the \(fence) returned") else {
            server.gate.release()
            return false
        }
        let early = launch(
            tasks..<(tasks + probes), kind: .read, phase: "round \(round) calls started after the \(fence) returned",
            plan: read)
        guard await entered(early) else { return false }
        server.gate.release()
        guard let parked = await collect([waiters], phase: "round \(round) after the \(fence)"),
            let first = await collect([early], phase: "round \(round) after the \(fence)")
        else { return false }
        // Let the discarded refresh land before the last probes.
        let deadline = ContinuousClock.now + runner.hangTimeout
        while server.ledger.entries.contains(where: { $0.call == .refresh && $0.respondedAt == nil }),
            ContinuousClock.now < deadline
        {
            await pause(.microseconds(200))
        }
        let late = launch(
            0..<probes, kind: .read, phase: "round \(round) calls after the discarded refresh landed", plan: read)
        guard let last = await collect([late], phase: "round \(round) after the discarded refresh") else {
            return false
        }
        record(parked + first + last)
        // Only the waiters still waiting when the fence began waited on the discarded refresh.
        observeDiscardedWaiters(parked.filter { $0.endedNanos > fenceStarted }, ended: ended, fence: fence)
        return await afterFence(fence, round: round)
    }

    /// The token is fresh and no refresh is in flight; readers keep reading through the
    /// fence. Every read that started after the fence returned must get nothing of the
    /// ended session: a cached fast path must be cleared before `signOut()` (or the other
    /// user's `signIn`) returns.
    mutating func cachedFenceRound(round: Int, fence: Fence) async -> Bool {
        server.setContext("round \(round) \(fence) with a cached token")
        let readers = min(scenario.tasks, 16)
        let marks = FenceMarks()
        let line = StartLine(count: readers)
        let latch = CompletionLatch<[ObservedCall]>(expected: readers)
        let stores = self.stores
        let subjects = self.subjects
        let clock = TokenClock.manual(time)
        // Stores with a synchronous read are read both ways, in turn, by every reader.
        let both = stores.first is any SynchronousTokenReading
        for reader in 0..<readers {
            Task {
                let account = reader % stores.count
                await line.arriveAndWait()
                latch.enter()
                var calls: [ObservedCall] = []
                var afterFence = 0
                for index in 0..<300 {
                    await Task.yield()
                    let isAfter = TokenServer.realNanoseconds() > marks.returned.load(ordering: .acquiring)
                    let request: StoreCall = both && index % 2 == 1 ? .currentToken : .validToken
                    let (call, _) = await request.perform(
                        on: stores[account], caller: reader, account: account, kind: .read,
                        phase:
                            "round \(round) read \(isAfter ? "after the \(fence) returned" : "before or during the \(fence)")",
                        clock: clock, subjects: subjects)
                    calls.append(call)
                    if index == 0 { marks.readersReading.add(1, ordering: .releasing) }
                    if isAfter {
                        afterFence += 1
                        if afterFence == (both ? 4 : 3) { break }
                    }
                }
                latch.finish(calls)
            }
        }
        let hot = ContinuousClock.now + runner.hangTimeout
        while marks.readersReading.load(ordering: .acquiring) < readers, ContinuousClock.now < hot {
            await pause(.microseconds(100))
        }
        guard await endSessions(fence) else { return false }
        marks.returned.store(events.last?.returnedNanos ?? 0, ordering: .releasing)
        guard await probeSynchronousRead("round \(round) right after the \(fence) returned") else { return false }
        // The coordinator's own read, right after the fence returned, in the same task.
        for account in stores.indices {
            guard await readCurrentToken(account, phase: "round \(round) read right after the \(fence) returned") != nil
            else {
                return false
            }
        }
        let deadline = ContinuousClock.now + runner.hangTimeout
        var results = await latch.wait(until: deadline)
        if results == nil, latch.finishedCount == readers { results = latch.partialResults }
        guard let results else {
            outcome.hang = .init(
                stuckCallers: readers - latch.finishedCount, ofCallers: readers, operation: .read,
                waitedSeconds: runner.hangTimeout.secondsValue, phase: "round \(round) reads through the \(fence)",
                detail: refreshStatus())
            return false
        }
        record(results.flatMap { $0 })
        return await afterFence(fence, round: round)
    }

    // MARK: Helpers

    /// The families whose sessions the next fence ends, one per account.
    func endingFamilies() -> Set<UInt64> {
        Set(
            events.compactMap { event -> UInt64? in
                if case .signIn(_, let family?) = event.kind, event.account < stores.count,
                    // The account's latest-started event: a sign-in overtaken by a later one returns
                    // after it, and is appended after it.
                    events.filter({ $0.account == event.account }).max(by: { $0.startedNanos < $1.startedNanos })?
                        .startedNanos == event.startedNanos
                {
                    return family
                }
                return nil
            })
    }

    /// Ends every account's session as `fence` says. `false` if the store hung, or a sign-in
    /// the server granted failed.
    mutating func endSessions(_ fence: Fence) async -> Bool {
        for account in stores.indices {
            switch fence {
            case .signOut:
                guard await signOut(account) else { return false }
            case .signOutTwice:
                guard await signOut(account), await signOut(account) else { return false }
            case .userSwitch, .signInAgain, .signOutAndBack:
                if fence == .signOutAndBack { guard await signOut(account) else { return false } }
                let slot = fence == .userSwitch ? 1 - signedInSlot[account] : signedInSlot[account]
                do {
                    guard try await signIn(account, slot: slot, fetchToken: false) else { return false }
                } catch {
                    outcome.failure = "sign-in of the next user failed: \(error)"
                    return false
                }
            case .refusedSwitch:
                guard await refusedSignIn(account, slot: 1 - signedInSlot[account]) else { return false }
            }
        }
        return true
    }

    /// A sign-in the server refuses: the store must end the session it had and throw
    /// `signInFailed` (the judge reads what it threw). `false` if the store hung.
    mutating func refusedSignIn(_ account: Int, slot: Int) async -> Bool {
        server.scriptSignIns([.refused])
        defer { server.scriptSignIns([]) }
        do {
            return try await signIn(account, slot: slot, fetchToken: false)
        } catch {
            return true
        }
    }

    /// Back to a signed-in session with a known token; after a sign-out, in some rounds, through
    /// a refused sign-in first.
    mutating func afterFence(_ fence: Fence, round: Int) async -> Bool {
        for account in stores.indices {
            if fence.leavesSignedIn {
                guard let call = await readCurrentToken(account, phase: "round \(round) read after the \(fence)")
                else {
                    return false
                }
                if call.error == nil { continue }
            } else if round % 4 == 0 {
                guard await refusedSignIn(account, slot: signedInSlot[account]),
                    await readCurrentToken(account, phase: "round \(round) read after a refused sign-in") != nil
                else { return false }
            }
            do { guard try await signIn(account, slot: signedInSlot[account]) else { return false } } catch {
                outcome.failure = "sign-in after the \(fence) failed: \(error)"
                return false
            }
        }
        return await probeSynchronousRead("round \(round) right after signing in again")
    }

}

/// How a round ends the session its callers were using.
enum Fence: CustomStringConvertible {
    /// The user signs out.
    case signOut
    /// The user signs out, and at once again.
    case signOutTwice
    /// Another user signs in on the same store.
    case userSwitch
    /// The same user signs in again: a new session replaces the old one.
    case signInAgain
    /// The user signs out and at once signs in again.
    case signOutAndBack
    /// Another user tries to sign in and the server refuses: the session ends all the same.
    case refusedSwitch

    /// Whether a session is current once the fence returns.
    var leavesSignedIn: Bool { self == .userSwitch || self == .signInAgain || self == .signOutAndBack }

    /// Whether the fence's end is another user's session.
    var switchesUser: Bool { self == .userSwitch || self == .refusedSwitch }

    /// As phases and findings name it.
    var description: String {
        switch self {
        case .signOut: "sign-out"
        case .signOutTwice: "double sign-out"
        case .userSwitch: "user switch"
        case .signInAgain: "same user's new sign-in"
        case .signOutAndBack: "sign-out and sign-in again"
        case .refusedSwitch: "refused switch"
        }
    }
}

/// What cached-fence readers share with the coordinator.
final class FenceMarks: Sendable {
    /// When the fence returned (real monotonic nanoseconds); `Int64.max` before it did.
    let returned = Atomic<Int64>(.max)
    /// Readers that have made their first call.
    let readersReading = Atomic<Int>(0)
}
