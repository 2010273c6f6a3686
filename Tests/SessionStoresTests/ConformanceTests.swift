import SessionContract
import SessionStores
import Testing
import TokenServer

/// The contract, checked against every store meant to be correct.
@Suite("Conformance", .timeLimit(.minutes(30)))
struct ConformanceTests {
    static let stores = StoreCatalog.correct

    @Test("1,000 callers at one expiry share exactly one refresh", arguments: stores)
    func expiryStorm(_ descriptor: StoreDescriptor) async throws {
        let fixture = StoreFixture(descriptor)
        let first = try await fixture.signedIn()
        fixture.expire()

        let outcomes = try await fixture.storm(1_000) { store throws(SessionError) in try await store.validToken() }

        #expect(fixture.refreshCalls == 1)
        let tokens = outcomes.compactMap(\.token)
        #expect(tokens.count == 1_000, "failures: \(Set(outcomes.compactMap(\.error)))")
        #expect(Set(tokens.map(\.generation)).count == 1, "every caller gets the same new token")
        #expect(tokens.allSatisfy { $0.generation > first.generation && $0.isFresh(at: fixture.now) })
        #expect(fixture.server.ledger.repeatedRedemptions.isEmpty)
    }

    @Test("1,000 rejections of the same token share exactly one refresh", arguments: stores)
    func rejectionStorm(_ descriptor: StoreDescriptor) async throws {
        let fixture = StoreFixture(descriptor)
        let rejected = try await fixture.signedIn()

        let outcomes = try await fixture.storm(1_000) { store throws(SessionError) in
            try await store.tokenRejected(rejected)
        }

        #expect(fixture.refreshCalls == 1)
        let tokens = outcomes.compactMap(\.token)
        #expect(tokens.count == 1_000, "failures: \(Set(outcomes.compactMap(\.error)))")
        #expect(Set(tokens.map(\.generation)) == [rejected.generation + 1])
    }

    @Test("a 401 for an older token returns the current one without calling the server", arguments: stores)
    func staleRejection(_ descriptor: StoreDescriptor) async throws {
        let fixture = StoreFixture(descriptor)
        let old = try await fixture.signedIn()
        let current = try await fixture.store.tokenRejected(old)
        #expect(fixture.refreshCalls == 1)

        let again = try await fixture.store.tokenRejected(old)
        #expect(again == current)
        #expect(fixture.refreshCalls == 1, "a stale 401 must not refresh")
    }

    @Test("a fresh token is served without calling the server", arguments: stores)
    func freshReads(_ descriptor: StoreDescriptor) async throws {
        let fixture = StoreFixture(descriptor)
        let first = try await fixture.signedIn()
        for _ in 0..<100 { #expect(try await fixture.store.validToken() == first) }
        fixture.time.advance(by: StoreFixture.lifetime - StoreFixture.skew - .seconds(1))
        #expect(try await fixture.store.validToken() == first, "still outside the skew")
        fixture.time.advance(by: .seconds(2))
        #expect(try await fixture.store.validToken().generation > first.generation, "inside the skew: refreshed")
        #expect(fixture.refreshCalls == 1)
    }

    @Test("no token before sign-in, none after sign-out", arguments: stores)
    func signedOut(_ descriptor: StoreDescriptor) async throws {
        let fixture = StoreFixture(descriptor)
        await #expect(throws: SessionError.signedOut) { try await fixture.store.validToken() }
        let token = try await fixture.signedIn()
        await fixture.store.signOut()
        await #expect(throws: SessionError.signedOut) { try await fixture.store.validToken() }
        await #expect(throws: SessionError.signedOut) { try await fixture.store.tokenRejected(token) }
    }

    @Test("a refresh finishing after sign-out is discarded; its waiters get signedOut", arguments: stores)
    func signOutFence(_ descriptor: StoreDescriptor) async throws {
        let fixture = StoreFixture(descriptor)
        _ = try await fixture.signedIn()
        fixture.expire()
        fixture.server.gate.hold()
        defer { fixture.server.gate.release() }
        let store = fixture.store
        let waiters = (0..<10).map { _ in fixture.validTokenTask() }
        let gate = fixture.server.gate
        try await eventually("the refresh to reach the server") { gate.waitingCount == 1 }

        await store.signOut()
        gate.release()
        for waiter in waiters {
            #expect(await waiter.value.error == .signedOut)
        }
        let ledger = fixture.server.ledger
        try await eventually("the refresh to complete") { ledger.refreshCalls == 1 }
        try await Task.sleep(for: .milliseconds(20))  // let the store see the late result
        await #expect(throws: SessionError.signedOut) { try await store.validToken() }
    }

    @Test("after another user signs in, no call returns the previous user's token", arguments: stores)
    func userSwitch(_ descriptor: StoreDescriptor) async throws {
        let fixture = StoreFixture(descriptor)
        _ = try await fixture.signedIn(as: StoreFixture.alice)
        fixture.expire()
        fixture.server.gate.hold()
        defer { fixture.server.gate.release() }
        let store = fixture.store
        let waiters = (0..<10).map { _ in fixture.validTokenTask() }
        let gate = fixture.server.gate
        try await eventually("Alice's refresh to reach the server") { gate.waitingCount == 1 }

        try await store.signIn(StoreFixture.bob)
        gate.release()
        for waiter in waiters {
            let outcome = await waiter.value
            #expect(outcome.token?.subject != StoreFixture.alice.subject, "Alice's token after Bob signed in")
        }
        try await Task.sleep(for: .milliseconds(20))  // let Alice's late refresh land
        #expect(try await store.validToken().subject == StoreFixture.bob.subject)
    }

    @Test("a failed refresh fails all its waiters once; the next call refreshes again", arguments: stores)
    func failureSharedNotSticky(_ descriptor: StoreDescriptor) async throws {
        let fixture = StoreFixture(descriptor)
        _ = try await fixture.signedIn()
        fixture.expire()
        fixture.server.injectRefreshFaults(.transientFailure)

        let outcomes = try await fixture.storm(200) { store throws(SessionError) in try await store.validToken() }

        #expect(fixture.refreshCalls == 1, "no retry storm")
        #expect(outcomes.allSatisfy { $0.error == .refreshFailed })
        let next = try await fixture.store.validToken()
        #expect(next.isFresh(at: fixture.now))
        #expect(fixture.refreshCalls == 2)
    }

    @Test("a revoked refresh token ends the session for every waiter", arguments: stores)
    func revoked(_ descriptor: StoreDescriptor) async throws {
        let fixture = StoreFixture(descriptor)
        _ = try await fixture.signedIn()
        fixture.expire()
        fixture.server.revokeSessions(of: StoreFixture.alice.subject)

        let outcomes = try await fixture.storm(50) { store throws(SessionError) in try await store.validToken() }

        #expect(fixture.refreshCalls == 1)
        #expect(outcomes.allSatisfy { $0.error == .refreshTokenRevoked })
        await #expect(throws: SessionError.refreshTokenRevoked) { try await fixture.store.validToken() }
        #expect(fixture.refreshCalls == 1, "a revoked session does not call the server again")
        _ = try await fixture.signedIn()
    }

    @Test("cancelling waiters, the first included, neither cancels nor poisons the refresh", arguments: stores)
    func cancellationIsolated(_ descriptor: StoreDescriptor) async throws {
        let fixture = StoreFixture(descriptor)
        _ = try await fixture.signedIn()
        fixture.expire()
        let gate = fixture.server.gate
        gate.hold()
        defer { gate.release() }
        let store = fixture.store
        let initiator = fixture.validTokenTask()
        try await eventually("the initiator's refresh to reach the server") { gate.waitingCount == 1 }
        let others = (0..<20).map { _ in fixture.validTokenTask() }
        try await Task.sleep(for: .milliseconds(20))
        initiator.cancel()
        for cancelled in others.prefix(5) { cancelled.cancel() }
        try await Task.sleep(for: .milliseconds(20))
        gate.release()

        let survivors = await others.dropFirst(5).asyncMap { await $0.value }
        let tokens = survivors.compactMap(\.token)
        #expect(tokens.count == 15, "failures: \(survivors.compactMap(\.error))")
        #expect(Set(tokens.map(\.generation)).count == 1)
        for cancelled in [initiator] + others.prefix(5) {
            let outcome = await cancelled.value
            // Prompt stores report the cancellation; others may finish the wait with the token.
            #expect(outcome.error == .cancelled || outcome.token?.generation == tokens.first?.generation)
        }
        #expect(try await store.validToken() == tokens.first)
        #expect(fixture.refreshCalls == 1)
    }

    @Test("when every waiter is cancelled the refresh still lands for the next caller", arguments: stores)
    func allWaitersCancelled(_ descriptor: StoreDescriptor) async throws {
        let fixture = StoreFixture(descriptor)
        _ = try await fixture.signedIn()
        fixture.expire()
        let gate = fixture.server.gate
        gate.hold()
        defer { gate.release() }
        let store = fixture.store
        let waiters = (0..<5).map { _ in Task { try? await store.validToken() } }
        try await eventually("the refresh to reach the server") { gate.waitingCount == 1 }
        for waiter in waiters { waiter.cancel() }
        gate.release()
        for waiter in waiters { _ = await waiter.value }
        let ledger = fixture.server
        try await eventually("the refresh to complete") { ledger.ledger.refreshCalls == 1 }
        let token = try await store.validToken()
        #expect(token.isFresh(at: fixture.now))
        #expect(fixture.refreshCalls == 1)
    }

    @Test("the synchronous read agrees with the asynchronous one", arguments: stores.filter(\.offersSynchronousRead))
    func synchronousRead(_ descriptor: StoreDescriptor) async throws {
        let fixture = StoreFixture(descriptor)
        let reader = try #require(fixture.store as? any SynchronousTokenReading)
        #expect(reader.currentToken() == nil)
        let token = try await fixture.signedIn()
        #expect(reader.currentToken() == token)
        fixture.expire()
        #expect(reader.currentToken() == nil, "an expired token is never read synchronously")
        let refreshed = try await fixture.store.validToken()
        #expect(reader.currentToken() == refreshed)
        await fixture.store.signOut()
        #expect(reader.currentToken() == nil)
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async -> T) async -> [T] {
        var results: [T] = []
        for element in self { results.append(await transform(element)) }
        return results
    }
}
