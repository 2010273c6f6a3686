import SessionSync
import Testing

/// The latch a coordinator waits on for its callers, with deadlines. A wait past its deadline
/// says so; a later wait — a patient coordinator's extension on a busy machine — waits until its
/// own deadline, not the first one's.
@Suite("Completion latch")
struct CompletionLatchTests {
    @Test("a wait after one that timed out waits for the results, not for the old deadline")
    func extensionWaitsForResults() async throws {
        let latch = CompletionLatch<Int>(expected: 3)
        latch.finish(1)
        latch.finish(2)
        #expect(await latch.wait(until: .now - .seconds(1)) == nil)
        let extended = Task { await latch.wait(until: .now + .seconds(600)) }
        // Time for the extension to register before the last caller finishes: with a wait that
        // inherited the first one's expiry, it would return nil here. Correct either way round.
        try await Task.sleep(for: .milliseconds(20))
        latch.finish(3)
        #expect(await extended.value?.sorted() == [1, 2, 3])
    }

    @Test("a wait for entry after one that timed out waits for the last caller to enter")
    func entryExtensionWaitsForEntry() async throws {
        let latch = CompletionLatch<Int>(expected: 2)
        latch.enter()
        #expect(await latch.waitForEntry(until: .now - .seconds(1)) == false)
        let extended = Task { await latch.waitForEntry(until: .now + .seconds(600)) }
        try await Task.sleep(for: .milliseconds(20))
        latch.enter()
        #expect(await extended.value == true)
    }

    @Test("a wait whose deadline passes before it registers still times out")
    func lateRegistrationTimesOut() async {
        let latch = CompletionLatch<Int>(expected: 1)
        #expect(await latch.wait(until: .now - .seconds(1)) == nil)
        #expect(await latch.waitForEntry(until: .now - .seconds(1)) == false)
        latch.finish(7)
        #expect(await latch.wait(until: .now - .seconds(1)) == [7])
    }
}
