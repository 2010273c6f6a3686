import Foundation
import SessionContract
import SessionStores
import Testing
import TokenServer

@testable import SessionBench

/// The writer of `writes-under-reads`: a 401 for the token it holds at each tick, each one a
/// refresh, every write timed and none made up in a burst.
@Suite("Steady writer")
struct SteadyWriterTests {
    @Test("each write is a 401 for the current token: one refresh per write, every write timed")
    func writes() async throws {
        let time = ManualTime()
        let server = TokenServer(configuration: .init(), clock: .manual(time))
        let store = MutexStore(configuration: SessionStoreConfiguration(endpoint: server, clock: .manual(time)))
        try await store.signIn(Credentials(subject: Subject("writer-user")))
        let writer = SteadyWriter(store, every: .milliseconds(1), caller: 4, phase: "writer test")
        // However slow the machine, wait for writes to happen rather than for time to pass.
        let deadline = ContinuousClock.now + .seconds(120)
        while server.ledger.refreshCalls < 5, ContinuousClock.now < deadline { await Task.yield() }
        let tally = await writer.finish()
        #expect(tally.writes >= 5)
        #expect(tally.errors.isEmpty, "\(tally.errors)")
        var recorder = LatencyRecorder()
        recorder.add(.rejection, tally.latency)
        #expect(recorder.summaries.first?.count == tally.writes)
        #expect(UInt64(server.ledger.refreshCalls) == tally.writes, "one refresh per 401 for the current token")
        #expect(server.ledger.repeatedRedemptions.isEmpty)
    }
}
