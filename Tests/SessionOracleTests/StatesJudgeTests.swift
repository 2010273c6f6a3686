import SessionContract
import SessionOracle
import Testing
import TokenServer

/// `session-states`' judge on histories written by hand: a real server's ledger says which
/// family each generation belongs to; the states the subscribers received are chosen.
@Suite("The session-states judge, on histories written by hand")
struct StatesJudgeTests {
    /// Family 1: generations 1 and 2 (a sign-in and a refresh); family 2: generation 3.
    static func ledger() async throws -> [LedgerEntry] {
        let server = TokenServer(configuration: .init(), clock: .manual(ManualTime()))
        let first = try await server.signIn(Credentials(subject: Subject("user-a")))
        _ = try await server.refresh(first.refreshToken)
        _ = try await server.signIn(Credentials(subject: Subject("user-b")))
        return server.ledger.entries
    }

    static func history(_ received: [[SessionState]], complete: Bool = true) async throws -> StatesHistory {
        var history = StatesHistory(subscribers: received.count)
        history.received = received.map { states in
            states.enumerated().map { StatesHistory.Received($0.element, at: Int64($0.offset)) }
        }
        history.ledger = try await ledger()
        history.complete = complete
        return history
    }

    static func invariants(_ history: StatesHistory) -> [Invariant] { StatesJudge.judge(history).map(\.invariant) }

    @Test("a whole lifecycle in order, a new session after the sign-out, is no finding")
    func inOrder() async throws {
        let history = try await Self.history([
            [
                .signedOut, .signedIn(generation: 1), .refreshing(generation: 1), .signedIn(generation: 2), .signedOut,
                .signedIn(generation: 3), .revoked,
            ],
            [.signedIn(generation: 2), .signedOut],
        ])
        #expect(Self.invariants(history).isEmpty)
    }

    @Test("a state of a session after the 'signed out' that ended it, or of a discarded refresh, is I24")
    func afterSignOut() async throws {
        let resurrected = try await Self.history([[.signedIn(generation: 1), .signedOut, .signedIn(generation: 2)]])
        let found = StatesJudge.judge(resurrected)
        #expect(found.map(\.invariant) == [.noSignedInAfterSignOut])
        #expect(found.first?.summary.contains("after the 'signed out' that ended it") == true)
        // A revocation ends the session as a sign-out does: a stale state of it after is the same.
        let afterRevoked = try await Self.history([[.signedIn(generation: 1), .revoked, .refreshing(generation: 1)]])
        let late = StatesJudge.judge(afterRevoked)
        #expect(late.map(\.invariant) == [.noSignedInAfterSignOut])
        #expect(late.first?.summary.contains("after the 'revoked' that ended it") == true)

        var discarded = try await Self.history([[.signedIn(generation: 1), .signedOut, .signedIn(generation: 2)]])
        discarded.discarded = [2]
        #expect(StatesJudge.judge(discarded).first?.summary.contains("a sign-out had discarded") == true)
        var unseen = try await Self.history([[.signedIn(generation: 1), .signedOut]])
        unseen.discarded = [2]
        #expect(Self.invariants(unseen).isEmpty, "a discarded refresh no subscriber heard of is no finding")
    }

    @Test("a generation older than one already seen, or an older session's, is I25")
    func order() async throws {
        let older = try await Self.history([[.signedIn(generation: 2), .signedIn(generation: 1)]])
        #expect(Self.invariants(older) == [.stateOrder])
        let olderSession = try await Self.history([[.signedIn(generation: 3), .signedIn(generation: 2)]])
        #expect(Self.invariants(olderSession) == [.stateOrder])
        let same = try await Self.history([
            [.signedIn(generation: 2), .refreshing(generation: 2), .signedIn(generation: 2)]
        ])
        #expect(Self.invariants(same).isEmpty)
    }

    @Test("a subscriber left behind after a change, or a late one whose first state is not the store's, is I23")
    func followed() async throws {
        var history = try await Self.history([[.signedIn(generation: 1)], [.signedIn(generation: 1)], []])
        history.observations = [
            .followed(event: "round 0: sign-in", expected: .signedIn(generation: 1), behind: []),
            .followed(
                event: "round 0: expiry", expected: .signedIn(generation: 2),
                behind: [.init(subscriber: 0, latest: .signedIn(generation: 1)), .init(subscriber: 2, latest: nil)]),
        ]
        let found = StatesJudge.judge(history)
        #expect(found.map(\.invariant) == [.observersSeeFinalState])
        #expect(
            found.first?.summary == "2 of 3 subscriber(s) never saw 'signed in (generation 2)' after round 0: expiry")
        #expect(found.first?.trace == ["subscriber 0's latest state: signed in (generation 1)"])

        history.observations = [
            .joined(
                event: "joins", expected: .signedIn(generation: 2), first: .signedIn(generation: 2), within: .seconds(2)
            ),
            .joined(event: "joins", expected: .signedIn(generation: 2), first: nil, within: .seconds(2)),
        ]
        let late = StatesJudge.judge(history)
        #expect(late.map(\.invariant) == [.observersSeeFinalState])
        #expect(late.first?.trace.first?.hasPrefix("its first state: nothing within 2") == true)
    }

    @Test("a phase cut short by a hang is judged on what was seen before it, not on unfinished sequences")
    func incomplete() async throws {
        var history = try await Self.history([[.signedIn(generation: 2), .signedIn(generation: 1)]], complete: false)
        #expect(Self.invariants(history).isEmpty)
        history.observations = [
            .followed(event: "e", expected: .signedOut, behind: [.init(subscriber: 0, latest: nil)])
        ]
        #expect(Self.invariants(history) == [.observersSeeFinalState])
    }
}
