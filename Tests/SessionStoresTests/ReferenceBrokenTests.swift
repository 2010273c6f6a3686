import SessionContract
import SessionStores
import Testing
import TokenServer

/// Proof that the checks can fail: the seed ADR's actor, as written, is caught.
@Suite("Reference-broken stores are caught", .timeLimit(.minutes(30)))
struct ReferenceBrokenTests {
    @Test func naiveActorIsMarkedBroken() throws {
        let naive = try #require(StoreCatalog.named("actor-naive"))
        #expect(naive.isReferenceBroken)
        #expect(!StoreCatalog.correct.contains(naive))
    }

    @Test("the seed ADR actor makes more than one refresh call for one expiry")
    func naiveActorDoubleRefreshes() async throws {
        let fixture = StoreFixture(try #require(StoreCatalog.named("actor-naive")))
        _ = try await fixture.signedIn()
        fixture.expire()

        let outcomes = try await fixture.storm(100) { store throws(SessionError) in try await store.validToken() }

        #expect(fixture.refreshCalls > 1, "re-entrancy lets every caller start its own refresh")
        #expect(!fixture.server.ledger.repeatedRedemptions.isEmpty, "the same refresh token was redeemed twice")
        #expect(!fixture.server.ledger.revokedFamilies.isEmpty, "and the rotating server logged the user out")
        #expect(outcomes.contains { $0.error == .refreshTokenRevoked })
    }

    @Test("the seed ADR actor resurrects the session when a refresh lands after sign-out")
    func naiveActorResurrects() async throws {
        let fixture = StoreFixture(try #require(StoreCatalog.named("actor-naive")))
        _ = try await fixture.signedIn()
        fixture.expire()
        let gate = fixture.server.gate
        gate.hold()
        defer { gate.release() }
        let store = fixture.store
        let waiter = Task { try? await store.validToken() }
        try await eventually("the refresh to reach the server") { gate.waitingCount == 1 }
        await store.signOut()
        gate.release()
        #expect(await waiter.value != nil, "a token returned after sign-out")
        #expect((try? await store.validToken()) != nil, "the signed-out session is back")
    }
}
