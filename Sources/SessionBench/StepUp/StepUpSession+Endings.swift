import SessionContract
import SessionOracle
import SessionSync
import TokenServer

/// The ways a `step-up` round ends its session, and what the session's prompt waiters must get.
extension StepUpSession {
    /// Lets the elevated token expire and sends 8 clinical requests, whose prompt is held open;
    /// returns once they have parked.
    func openPrompt() async -> CompletionLatch<Call> {
        time.advance(by: stepUpLifetime)
        let before = user.prompts.count
        user.gate.hold()
        let latch = launch(8)
        let deadline = ContinuousClock.now + runner.hangTimeout
        while user.prompts.count == before, latch.finishedCount < 8, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(1))
        }
        _ = await latch.waitForEntry(until: deadline)
        await Self.settle()
        return latch
    }

    /// Sign-out while a prompt is open; the user approves after it returned.
    mutating func signOutDuringPrompt(round: Int, outcome: inout DriverOutcome) async -> Bool {
        let phase = "round \(round): sign-out during a prompt"
        setContext(phase)
        let latch = await openPrompt()
        let store = self.store
        let calls = self.calls
        guard await watched(phase, outcome: &outcome, { await calls.signOut(store) }) != nil else { return false }
        ended(round: round)
        family = 0
        setContext("round \(round): after sign-out")
        user.gate.release()
        guard let calls = await collect(latch, phase: phase, outcome: &outcome) else { return false }
        observe(
            .endedPrompt(phase: phase, ending: "the session ended", results: Self.elevated(calls), session: now))
        // Let a late answer do whatever the store does with it, then look again.
        try? await Task.sleep(for: .milliseconds(5))
        return await checkClientsSignedOut(when: "after sign-out (round \(round))", outcome: &outcome)
    }

    /// Sign-out with a fresh elevated token held: it must go with the session.
    mutating func signOutWithElevationHeld(round: Int, outcome: inout DriverOutcome) async -> Bool {
        let phase = "round \(round): sign-out with the elevated token fresh"
        setContext(phase)
        let store = self.store
        let calls = self.calls
        guard await watched(phase, outcome: &outcome, { await calls.signOut(store) }) != nil else { return false }
        ended(round: round)
        family = 0
        setContext("round \(round): after sign-out")
        return await checkClientsSignedOut(
            when: "after a sign-out with the elevated token fresh (round \(round))", outcome: &outcome)
    }

    /// Another user signs in while the signed-in user's prompt is open; the answer comes after.
    mutating func switchDuringPrompt(round: Int, outcome: inout DriverOutcome) async -> Bool {
        let phase = "round \(round): user switch during a prompt"
        setContext(phase)
        let latch = await openPrompt()
        subject = (round + 1) % 2
        guard await signIn(round: round, outcome: &outcome) else {
            user.gate.release()
            return false
        }
        signedInAhead = round + 1
        setContext("round \(round): after the switch")
        user.gate.release()
        guard let calls = await collect(latch, phase: phase, outcome: &outcome) else { return false }
        observe(
            .endedPrompt(phase: phase, ending: "another user signed in", results: Self.elevated(calls), session: now))
        try? await Task.sleep(for: .milliseconds(5))
        return true
    }
}
