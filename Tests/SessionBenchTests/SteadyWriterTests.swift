import Foundation
import SessionContract
@testable import SessionMeasurement
import SessionOracle
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
        let tally = try #require(await writer.finish(hangTimeout: .seconds(120)))
        #expect(tally.writes >= 5)
        #expect(tally.errors.isEmpty, "\(tally.errors)")
        var recorder = LatencyRecorder()
        recorder.add(.rejection, tally.latency)
        #expect(recorder.summaries.first?.count == tally.writes)
        #expect(UInt64(server.ledger.refreshCalls) == tally.writes, "one refresh per 401 for the current token")
        #expect(server.ledger.repeatedRedemptions.isEmpty)
    }

    @Test("a writer whose 401 never returns is a hang of the write, at the hang timeout, not a run that never ends")
    func stuckWriteIsHung() async throws {
        var scenario = try ScenarioCatalog.named("writes-under-reads")
        scenario.tasks = 2
        scenario.duration = .milliseconds(100)
        let descriptor = StoreDescriptor(name: "stuck-401", summary: "a 401 never returns") {
            StuckRejectionStore(MutexStore(configuration: $0))
        }
        let started = ContinuousClock.now
        let result = await ScenarioRunner(hangTimeout: .seconds(1)).run(descriptor, scenario)
        let hang = try #require(result.hang, "\(result.verdict) \(result.failure ?? "")")
        #expect(result.verdict == .hung)
        #expect(hang.operation == .rejection && hang.phase == "writes under async reads", "\(hang)")
        #expect(hang.detail?.contains("tokenRejected(_:) had not returned") == true)
        // 1 s, waited up to four times more for a busy machine: seconds, not the suite's time limit.
        #expect(ContinuousClock.now - started < .seconds(60))
    }
}

/// Reads from `inner`; a 401 is never answered (its caller sleeps for an hour).
final class StuckRejectionStore: SessionStore, Sendable {
    let inner: any SessionStore
    init(_ inner: any SessionStore) { self.inner = inner }
    func validToken() async throws(SessionError) -> AccessToken { try await inner.validToken() }
    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        try? await Task.sleep(for: .seconds(3600))
        throw .signedOut
    }
    func signIn(_ credentials: Credentials) async throws(SessionError) { try await inner.signIn(credentials) }
    func signOut() async { await inner.signOut() }
}

/// A store that signs in, and whose token calls then never return.
final class StuckReadAfterSignInStore: SessionStore, Sendable {
    let inner: any SessionStore
    init(_ inner: any SessionStore) { self.inner = inner }
    func validToken() async throws(SessionError) -> AccessToken {
        try? await Task.sleep(for: .seconds(3600))
        throw .signedOut
    }
    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken { try await validToken() }
    func signIn(_ credentials: Credentials) async throws(SessionError) { try await inner.signIn(credentials) }
    func signOut() async { await inner.signOut() }
}

@Suite("A storm's set-up")
struct StormSetUpTests {
    @Test("a store whose read right after sign-in never returns is hung in sign-in, not 'sign-in failed'")
    func readAfterSignInHangs() async throws {
        let descriptor = StoreDescriptor(name: "stuck-after-sign-in", summary: "reads never return") {
            StuckReadAfterSignInStore(MutexStore(configuration: $0))
        }
        let result = await ScenarioRunner(hangTimeout: .seconds(1)).run(descriptor, try ScenarioCatalog.named("expiry-storm"))
        #expect(result.verdict == .hung, "\(result.verdict) \(result.failure ?? "")")
        #expect(result.hang?.operation == .signIn && result.hang?.phase == "sign-in", "\(String(describing: result.hang))")
        #expect(result.failure == nil)
    }
}

