import SessionContract
import SessionOracle
import Testing
import TokenServer

/// `shared-storage`'s and `replicas`' judge on histories written by hand: a real server's ledger
/// (each test makes the refresh calls it needs, under the event's context), the answers and what
/// the storage held chosen.
@Suite("The shared-storage judge, on histories written by hand")
struct SharedStorageJudgeTests {
    typealias Answer = SharedStorageHistory.Answer
    typealias Event = SharedStorageHistory.Event

    static func history(_ observations: [SharedStorageHistory.Observation], lockTimeout: Double? = nil)
        -> SharedStorageHistory
    {
        var history = SharedStorageHistory(
            backend: "json-file", holders: 4, processes: 2, saved: 1, lockTimeout: lockTimeout)
        history.observations = observations
        return history
    }

    static func invariants(_ history: SharedStorageHistory) -> [Invariant] {
        SharedStorageJudge.judge(history).findings.map(\.invariant)
    }

    /// A session signed in (generation 1), then `refreshes` refresh calls under `context`, the
    /// first redeeming the grant and the rest presenting the same token again.
    static func ledger(refreshes: Int, context: String = "event 0") async throws -> [LedgerEntry] {
        let server = TokenServer(configuration: .init(tokenLifetime: .seconds(300)))
        let grant = try await server.signIn(Credentials(subject: Subject("shared-judge-user")))
        server.setContext(context)
        for _ in 0..<refreshes { _ = await server.refreshResult(grant.refreshToken) }
        return server.ledger.entries
    }

    static func answers(_ results: [Result<UInt64, SessionError>]) -> [Answer] {
        results.enumerated().map {
            Answer(instance: "process \($0.offset / 2) instance \($0.offset % 2)", result: $0.element)
        }
    }

    static let expiry = Event(index: 0, expiry: true, holders: 4, issuedBefore: 1, held: [:])

    @Test(
        "one refresh for an expiry, every caller a newer token: nothing, and three holders took the grant from storage")
    func cleanEvent() async throws {
        let ledger = try await Self.ledger(refreshes: 1)
        let judged = SharedStorageJudge.judge(
            Self.history([
                .event(Self.expiry, answers: Self.answers(Array(repeating: .success(2), count: 4)), ledger: ledger)
            ]))
        #expect(judged.findings.isEmpty, "\(judged.findings.map(\.summary))")
        #expect(judged.tally.grantsTaken == 3)
    }

    @Test("two refresh calls for one expiry are I1, with the event in the summary; no grant counted as taken")
    func twoRefreshes() async throws {
        let ledger = try await Self.ledger(refreshes: 2)
        let judged = SharedStorageJudge.judge(
            Self.history([.event(Self.expiry, answers: Self.answers([.success(2), .success(2)]), ledger: ledger)]))
        #expect(judged.findings.map(\.invariant) == [.singleFlight])
        #expect(
            judged.findings.first?.summary
                == "2 refresh calls for one expiry (event 0, an expiry for 4 of the 4 store instances sharing one json-file storage across 2 processes)"
        )
        #expect(judged.tally.grantsTaken == 0)
    }

    @Test("a token issued before the expiry is I4; after a 401 storm, the token the 401 was for is I6")
    func staleAnswers() async throws {
        let ledger = try await Self.ledger(refreshes: 1)
        #expect(
            Self.invariants(Self.history([.event(Self.expiry, answers: Self.answers([.success(1)]), ledger: ledger)]))
                == [.fresh])
        let storm = Event(index: 0, expiry: false, holders: 1, issuedBefore: 1, held: ["process 0 instance 0": 2])
        #expect(
            Self.invariants(Self.history([.event(storm, answers: Self.answers([.success(2)]), ledger: ledger)]))
                == [.staleRejectionDoesNotRefresh])
    }

    @Test(
        "an error though the server refused nothing: I12, or I13 for an error that ends the session; after a refusal, nothing"
    )
    func failures() async throws {
        let ledger = try await Self.ledger(refreshes: 1)
        #expect(
            Self.invariants(
                Self.history([.event(Self.expiry, answers: Self.answers([.failure(.refreshFailed)]), ledger: ledger)]))
                == [.served])
        #expect(
            Self.invariants(
                Self.history([.event(Self.expiry, answers: Self.answers([.failure(.signedOut)]), ledger: ledger)]))
                == [.sessionKept])
        // The second presentation of one refresh token: the server refuses, the session is over.
        let refused = try await Self.ledger(refreshes: 2)
        let judged = Self.invariants(
            Self.history([.event(Self.expiry, answers: Self.answers([.failure(.signedOut)]), ledger: refused)]))
        #expect(judged == [.singleFlight], "the reuse is I1's (and the audit's I7), not the callers': \(judged)")
    }

    @Test(
        "refreshFailed on a crowded machine over a lock with a timeout: not judged, the event counted; anything else still is"
    )
    func crowdedLockWaits() async throws {
        let ledger = try await Self.ledger(refreshes: 1)
        let gaveUp = Self.answers([.success(2), .success(2), .failure(.refreshFailed), .failure(.refreshFailed)])
        // Crowded, over a lock with a timeout: the waiters that gave up are the backend's transient failure.
        let excused = SharedStorageJudge.judge(
            Self.history([.event(Self.expiry, answers: gaveUp, ledger: ledger, crowded: true)], lockTimeout: 2))
        #expect(excused.findings.isEmpty)
        #expect(
            excused.tally.grantsTaken == 0 && excused.tally.crowdedEvents == 1 && excused.tally.grantsNotCounted == 3)
        // Not crowded, or no lock timeout to give up after: I12.
        #expect(
            Self.invariants(Self.history([.event(Self.expiry, answers: gaveUp, ledger: ledger)], lockTimeout: 2))
                == [.served])
        #expect(
            Self.invariants(Self.history([.event(Self.expiry, answers: gaveUp, ledger: ledger, crowded: true)]))
                == [.served])
        // Crowded, but no caller served, or no refresh made: the lock's timeout explains nothing: I12.
        let noneServed = Self.answers(Array(repeating: .failure(.refreshFailed), count: 4))
        #expect(
            Self.invariants(
                Self.history([.event(Self.expiry, answers: noneServed, ledger: ledger, crowded: true)], lockTimeout: 2))
                == [.served])
        let noRefresh = try await Self.ledger(refreshes: 0)
        #expect(
            Self.invariants(
                Self.history([.event(Self.expiry, answers: gaveUp, ledger: noRefresh, crowded: true)], lockTimeout: 2)
            )
            .contains(.served))
        // Crowded, but a caller was told the session ended: still I13. And two refreshes: still I1.
        let ended = Self.answers([.success(2), .failure(.signedOut), .failure(.refreshFailed)])
        #expect(
            Self.invariants(
                Self.history([.event(Self.expiry, answers: ended, ledger: ledger, crowded: true)], lockTimeout: 2))
                == [.sessionKept])
        let twice = try await Self.ledger(refreshes: 2)
        #expect(
            Self.invariants(
                Self.history([.event(Self.expiry, answers: gaveUp, ledger: twice, crowded: true)], lockTimeout: 2)
            )
            .contains(.singleFlight))
    }

    @Test("the storage after an event: older than a caller's token or empty is I15, unreadable I14, the newest nothing")
    func storage() {
        #expect(
            Self.invariants(Self.history([.storage(after: "event 0", held: .session(generation: 1), newest: 2)])) == [
                .durableRotation
            ])
        #expect(
            Self.invariants(Self.history([.storage(after: "event 0", held: .empty, newest: 2)])) == [.durableRotation])
        #expect(
            Self.invariants(Self.history([.storage(after: "event 0", held: .unreadable, newest: 2)])) == [.restorable])
        #expect(
            Self.invariants(Self.history([.storage(after: "event 0", held: .session(generation: 2), newest: 2)]))
                .isEmpty)
    }

    @Test(
        "after a sign-out: a token is I8, a refresh presented is I8, another error I13, a session left in storage I16")
    func afterSignOut() async throws {
        let none = try await Self.ledger(refreshes: 0)
        let signedOut = Self.answers([.failure(.signedOut), .failure(.signedOut)])
        #expect(Self.invariants(Self.history([.afterSignOut(answers: signedOut, ledger: none, held: .empty)])).isEmpty)
        let served = Self.invariants(
            Self.history([.afterSignOut(answers: Self.answers([.success(2)]), ledger: none, held: .empty)]))
        #expect(served == [.signOutFence])
        let presented = try await Self.ledger(refreshes: 1, context: "after sign-out")
        let sent = SharedStorageJudge.judge(
            Self.history([.afterSignOut(answers: signedOut, ledger: presented, held: .empty)])
        ).findings
        #expect(sent.map(\.invariant) == [.signOutFence])
        #expect(sent.first?.summary.hasPrefix("the ended session's refresh token was presented") == true)
        #expect(
            Self.invariants(
                Self.history([
                    .afterSignOut(answers: Self.answers([.failure(.refreshFailed)]), ledger: none, held: .empty)
                ]))
                == [.sessionKept])
        #expect(
            Self.invariants(
                Self.history([.afterSignOut(answers: signedOut, ledger: none, held: .session(generation: 2))]))
                == [.signOutDurable])
        #expect(
            Self.invariants(Self.history([.signedOutOnDisk(exposures: ["session.json: refresh token"])])) == [
                .signOutDurable
            ])
    }

    @Test("a first call that failed over the saved session is I15")
    func firsts() {
        #expect(Self.invariants(Self.history([.firsts(process: 1, results: [.success(1), .success(1)])])).isEmpty)
        let found = SharedStorageJudge.judge(
            Self.history([.firsts(process: 1, results: [.success(1), .failure(.signedOut)])]))
        #expect(found.findings.map(\.invariant) == [.durableRotation])
        #expect(
            found.findings.first?.summary.contains("in process 1 was made over the saved session (generation 1)")
                == true)
    }

    @Test(
        "replicas: a killed lock holder that kept the others past the lock's timeout is I12, unless the machine crowded them out"
    )
    func recovery() async throws {
        let ledger = try await Self.ledger(refreshes: 1)
        func judged(seconds: Double, killedInTurn: Bool = true, crowded: Bool = false) -> [ContractJudge.Finding] {
            SharedStorageJudge.judge(
                Self.history(
                    [
                        .recovery(
                            Self.expiry, answers: Self.answers([.success(2)]), ledger: ledger, seconds: seconds,
                            killedInTurn: killedInTurn, crowded: crowded)
                    ],
                    lockTimeout: 5)
            ).findings
        }
        let late = judged(seconds: 12.5)
        #expect(late.map(\.invariant) == [.served])
        #expect(late.first?.summary.contains("waiting 12.5 s, past the json-file lock's timeout of 5 s") == true)
        #expect(judged(seconds: 4).isEmpty)
        #expect(judged(seconds: 12.5, crowded: true).isEmpty)
        #expect(judged(seconds: 12.5, killedInTurn: false).isEmpty)
    }

    @Test(
        "replicas: a stall held past half again the lock's timeout is I12; waiters may fail, callers after it may not")
    func stall() async throws {
        let ledger = try await Self.ledger(refreshes: 1)
        func judged(waited: Double?, during: [Result<UInt64, SessionError>], rest: [Result<UInt64, SessionError>])
            -> [Invariant]
        {
            Self.invariants(
                Self.history(
                    [
                        .stall(
                            .init(
                                index: 0, issuedBefore: 1, during: Self.answers(during), rest: Self.answers(rest),
                                waited: waited, crowded: false),
                            ledger: ledger)
                    ],
                    lockTimeout: 5))
        }
        #expect(judged(waited: 6, during: [.failure(.refreshFailed)], rest: [.success(2)]).isEmpty)
        #expect(judged(waited: 8, during: [.success(2)], rest: [.success(2)]) == [.served])
        #expect(judged(waited: 6, during: [], rest: [.failure(.refreshFailed)]) == [.served])
        #expect(judged(waited: nil, during: [], rest: [.success(1)]) == [.fresh])
    }
}
