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
}
