import SessionContract
import Testing
import TokenServer

@testable import SessionOracle

/// What a sign-out or a sign-in leaves in the storage of a store that keeps its session, judged
/// over the writes it saw: by the time the fence returned, its clear (or its own session's save)
/// is the last write, never a save of the session it ended that landed after the clear.
@Suite("Storage at the fence's return")
struct ContractJudgeStorageTests {
    /// The messages `judgeStorage` reports for `writes`, judged once every event has returned.
    private func findings(_ history: ContractJudgeTests.History, _ writes: [StorageWrite], saved: UInt64?) -> [String] {
        var judge = ContractJudge(skew: .seconds(1))
        var found: [String] = []
        let timeline = SessionTimeline(
            events: history.events, entries: history.server.ledger.entries, issued: history.server.issuedTokens)
        judge.judgeStorage(
            saved: saved, writes: writes, account: 0, calls: [], timeline: timeline,
            at: (history.events.map(\.returnedNanos).max() ?? 0) + 1_000
        ) { found.append($0.summary) }
        return found
    }

    private let landedAfterClear = "a save landed after its clear"

    @Test(
        "a refreshed grant saved between the sign-out's clear and its return is found; saved before the clear, it is not"
    )
    func signOut() async throws {
        var history = ContractJudgeTests.History()
        let first = try await history.signIn(0)
        let next = try await history.server.refresh(first.refreshToken)
        let (g1, g2) = (first.accessToken.generation, next.accessToken.generation)
        let start = TokenServer.realNanoseconds()
        history.events.append(
            SessionEvent(account: 0, kind: .signOut, startedNanos: start + 100, returnedNanos: start + 200))
        let late = [
            StorageWrite(at: start, generation: g1), StorageWrite(at: start + 120, generation: nil),
            StorageWrite(at: start + 150, generation: g2),
        ]
        #expect(findings(history, late, saved: g2).contains { $0.contains(landedAfterClear) })
        let early = [
            StorageWrite(at: start, generation: g1), StorageWrite(at: start + 110, generation: g2),
            StorageWrite(at: start + 150, generation: nil),
        ]
        #expect(findings(history, early, saved: nil).isEmpty)
    }

    @Test("a sign-in may end with its own session saved, never with the one it ended")
    func signIn() async throws {
        var history = ContractJudgeTests.History()
        let first = try await history.signIn(0)
        let next = try await history.server.refresh(first.refreshToken)
        let start = TokenServer.realNanoseconds()
        let other = try await history.server.signIn(Credentials(subject: history.subjects[0][1]))
        let family = try #require(history.server.issuedTokens[other.accessToken.generation]?.family)
        history.events.append(
            SessionEvent(
                account: 0, kind: .signIn(slot: 1, family: family), startedNanos: start + 100,
                returnedNanos: start + 200))
        let (g2, b) = (next.accessToken.generation, other.accessToken.generation)
        let own = [
            StorageWrite(at: start, generation: first.accessToken.generation),
            StorageWrite(at: start + 110, generation: nil), StorageWrite(at: start + 120, generation: g2),
            StorageWrite(at: start + 130, generation: b),
        ]
        #expect(!findings(history, own, saved: b).contains { $0.contains(landedAfterClear) })
        let overwritten = [
            StorageWrite(at: start, generation: first.accessToken.generation),
            StorageWrite(at: start + 110, generation: nil), StorageWrite(at: start + 120, generation: b),
            StorageWrite(at: start + 130, generation: g2),
        ]
        #expect(findings(history, overwritten, saved: g2).contains { $0.contains(landedAfterClear) })
    }
}
