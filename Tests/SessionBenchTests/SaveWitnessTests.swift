import Foundation
import SessionContract
import SessionOracle
import Synchronization
import Testing

@testable import SessionBench

/// Persist before publish seen from the store's side: a harness thread reads `currentToken()`
/// while each save is under way, bounded so that a store holding its lock across the save never
/// deadlocks the run.
@Suite("Save witness")
struct SaveWitnessTests {
    /// A synchronous reader that answers `generation`, or blocks in `currentToken()` while held.
    final class Reader: SynchronousTokenReading, @unchecked Sendable {
        let generation = Atomic<UInt64>(0)
        let held = NSCondition()
        var holding = false

        func currentToken() -> AccessToken? {
            held.lock()
            while holding { held.wait() }
            held.unlock()
            let generation = generation.load(ordering: .relaxed)
            guard generation > 0 else { return nil }
            return AccessToken(
                value: "witness-token", subject: Subject("witness-user"), generation: generation,
                expiresAt: TokenInstant(nanoseconds: .max))
        }

        func hold(_ on: Bool) {
            held.lock()
            holding = on
            held.broadcast()
            held.unlock()
        }

        func validToken() async throws(SessionError) -> AccessToken { throw .signedOut }
        func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken { throw .signedOut }
        func signIn(_ credentials: Credentials) async throws(SessionError) {}
        func signOut() async {}
    }

    @Test("a save records what the store's synchronous read answered while it was under way")
    func records() throws {
        let reader = Reader()
        let storage = MemoryStorage()
        // However busy the machine, the witness's thread is given its time to begin.
        storage.watch(reader, startBound: .seconds(60))
        defer { storage.close() }
        let grant = { (generation: UInt64) in
            TokenGrant(
                accessToken: AccessToken(
                    value: "saved", subject: Subject("witness-user"), generation: generation,
                    expiresAt: TokenInstant(nanoseconds: .max)),
                refreshToken: RefreshToken("refresh"))
        }
        try storage.save(grant(3))
        reader.generation.store(4, ordering: .relaxed)
        try storage.save(grant(4))
        let writes = storage.contents.writes
        #expect(writes.map(\.generation) == [3, 4])
        #expect(writes.map(\.seenWhileSaving) == [nil, 4], "nothing served during the first save; the token during the second")
    }

    @Test("a store whose read blocks during the save leaves it unanswered, within the bound, and the witness reads again after")
    func blockedRead() throws {
        let reader = Reader()
        reader.generation.store(2, ordering: .relaxed)
        let witness = SaveWitness(reader, startBound: .seconds(60))
        defer { witness.stop() }
        #expect(witness.read() == 2)
        reader.hold(true)
        #expect(witness.read() == nil, "the read waits on the store: the save goes on without an answer")
        reader.hold(false)
        // The witness's thread finishes the held read, then answers the next request.
        var answered: UInt64?
        for _ in 0..<1_000 where answered == nil { answered = witness.read() }
        #expect(answered == 2)
    }
}
