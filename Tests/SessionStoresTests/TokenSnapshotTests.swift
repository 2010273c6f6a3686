import SessionContract
import SessionStores
import Testing

/// What ``TokenSnapshot`` hands out: the published token while fresh outside the skew, nothing
/// once something else (or `nil`) is published, and never another snapshot's token.
@Suite("Token snapshot")
struct TokenSnapshotTests {
    static func token(_ generation: UInt64, expiresAt seconds: Int64) -> AccessToken {
        AccessToken(
            value: "token-\(generation)", subject: Subject("user-snapshot"), generation: generation,
            expiresAt: TokenInstant(nanoseconds: seconds * 1_000_000_000))
    }

    static func at(_ seconds: Int64) -> TokenInstant { TokenInstant(nanoseconds: seconds * 1_000_000_000) }

    @Test("nothing before the first publish; the published token while it is fresh outside the skew")
    func freshness() {
        let snapshot = TokenSnapshot(skew: .seconds(5))
        #expect(snapshot.freshToken(at: Self.at(1)) == nil)
        let first = Self.token(1, expiresAt: 100)
        snapshot.publish(first)
        #expect(snapshot.freshToken(at: Self.at(1)) == first)
        #expect(snapshot.freshToken(at: Self.at(94)) == first, "a thread's own copy, still fresh")
        #expect(snapshot.freshToken(at: Self.at(95)) == nil, "inside the skew")
        #expect(snapshot.freshToken(at: Self.at(200)) == nil)
    }

    @Test("a token whose expiry minus the skew is before every instant is never fresh")
    func skewBeforeEveryInstant() {
        let snapshot = TokenSnapshot(skew: .seconds(5))
        let ancient = AccessToken(
            value: "token-ancient", subject: Subject("user-snapshot"), generation: 1,
            expiresAt: TokenInstant(nanoseconds: .min + 1))
        snapshot.publish(ancient)
        #expect(snapshot.freshToken(at: Self.at(1)) == nil)
    }

    @Test("a new publish replaces every thread's copy at once; nil sends readers away")
    func republish() {
        let snapshot = TokenSnapshot(skew: .zero)
        let first = Self.token(1, expiresAt: 100), second = Self.token(2, expiresAt: 200)
        snapshot.publish(first)
        #expect(snapshot.freshToken(at: Self.at(1)) == first)
        snapshot.publish(second)
        #expect(snapshot.freshToken(at: Self.at(1)) == second, "the copy of the old version is not used")
        snapshot.publish(nil)
        #expect(snapshot.freshToken(at: Self.at(1)) == nil)
        snapshot.publish(first)
        #expect(snapshot.freshToken(at: Self.at(1)) == first)
    }

    @Test("two snapshots read on one thread never answer with each other's token")
    func twoPublishers() {
        let one = TokenSnapshot(skew: .zero), other = TokenSnapshot(skew: .zero)
        let first = Self.token(1, expiresAt: 100), second = Self.token(1, expiresAt: 300)
        one.publish(first)
        other.publish(second)
        for _ in 0..<3 {
            #expect(one.freshToken(at: Self.at(1))?.expiresAt == first.expiresAt)
            #expect(other.freshToken(at: Self.at(1))?.expiresAt == second.expiresAt)
        }
        other.publish(nil)
        #expect(other.freshToken(at: Self.at(1)) == nil)
        #expect(one.freshToken(at: Self.at(1)) == first)
    }

    @Test("no refresh under way: a reader is sent to the actor at once")
    func noRefreshNoWait() async {
        let snapshot = TokenSnapshot(skew: .zero)
        #expect(await snapshot.refreshOutcome() == nil)
        snapshot.publish(Self.token(1, expiresAt: 100))
        #expect(await snapshot.refreshOutcome() == nil)
    }

    @Test("readers that miss during a refresh wait for it and get the outcome the actor hands on")
    func waitersGetTheOutcome() async throws {
        let snapshot = TokenSnapshot(skew: .zero)
        snapshot.publish(nil, refreshing: true)
        let next = Self.token(2, expiresAt: 200)
        async let first = snapshot.refreshOutcome()
        async let second = snapshot.refreshOutcome()
        await Self.waitUntil { snapshot.waitingCount == 2 }
        snapshot.publish(next, outcome: .success(next))
        #expect(try await first?.get() == next)
        #expect(try await second?.get() == next)
        #expect(snapshot.waitingCount == 0)
    }

    @Test("a refresh ended by sign-out or failure hands its waiters that error; without an outcome, the actor")
    func waitersGetTheError() async {
        let snapshot = TokenSnapshot(skew: .zero)
        snapshot.publish(nil, refreshing: true)
        async let signedOut = snapshot.refreshOutcome()
        await Self.waitUntil { snapshot.waitingCount == 1 }
        snapshot.publish(nil, outcome: .failure(.signedOut))
        #expect(await Self.error(signedOut) == .signedOut)

        snapshot.publish(nil, refreshing: true)
        async let sentOn = snapshot.refreshOutcome()
        await Self.waitUntil { snapshot.waitingCount == 1 }
        snapshot.publish(Self.token(3, expiresAt: 300))
        #expect(await sentOn == nil, "no outcome to hand on: ask the actor")
    }

    @Test("a waiter that is cancelled leaves with cancelled; the others still get the outcome")
    func cancelledWaiterLeaves() async throws {
        let snapshot = TokenSnapshot(skew: .zero)
        snapshot.publish(nil, refreshing: true)
        let cancelled = Task { await snapshot.refreshOutcome() }
        async let kept = snapshot.refreshOutcome()
        await Self.waitUntil { snapshot.waitingCount == 2 }
        cancelled.cancel()
        #expect(await Self.error(cancelled.value) == .cancelled)
        #expect(snapshot.waitingCount == 1)
        let next = Self.token(2, expiresAt: 200)
        snapshot.publish(next, outcome: .success(next))
        #expect(try await kept?.get() == next)

        // Cancelled before it waits: it does not wait at all.
        snapshot.publish(nil, refreshing: true)
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await snapshot.refreshOutcome()
        }
        #expect(await Self.error(early.value) == .cancelled)
        #expect(snapshot.waitingCount == 0)
    }

    static func error(_ outcome: Result<AccessToken, SessionError>?) -> SessionError? {
        guard case .failure(let error) = outcome else { return nil }
        return error
    }

    /// Yields until `condition` holds: the waiters park on other tasks.
    static func waitUntil(_ condition: () -> Bool) async {
        while !condition() { await Task.yield() }
    }
}
