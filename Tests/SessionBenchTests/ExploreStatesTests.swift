import Foundation
import SessionContract
import Testing

@testable import SessionBench
@testable import SessionBenchCLI
@testable import SessionOracle
@testable import TokenServer

extension ExploreCommandTests {
    /// Wrong state streams of the self-test stores.
    static let wrongStateStreams = [
        "states-task-per-change", "states-late-join", "states-announce-refresh", "states-delayed-spinner",
    ]

    @Test(
        "session-states: every store with a state stream passes; each wrong stream is caught, and its string replays it"
    )
    func sessionStates() async throws {
        let correct = try await ToolProcess.run(
            ["explore", "--scenario", "session-states", "--schedules", "300", "--quiet"], timeout: 300)
        #expect(correct.status == 0, "\(correct.stdout)\(correct.stderr)")
        for store in ["lock-free-read", "mutex", "nslock", "actor-task", "actor-fast-read"] {
            #expect(Self.row(store, in: correct.stdout).prefix(3) == [store, "pass", "300"], "\(correct.stdout)")
        }
        // A store without a state stream is left out by default, and refused by name.
        #expect(Self.row("main-actor", in: correct.stdout).isEmpty, "\(correct.stdout)")
        let refused = try await ToolProcess.run(
            ["explore", "--scenario", "session-states", "--stores", "main-actor"], timeout: 60)
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(refused.stderr.contains("main-actor does not declare a state stream (offersStateStream)"))
        let wrong = try await ToolProcess.run(
            [
                "explore", "--stores", Self.wrongStateStreams.joined(separator: ","), "--scenario",
                "session-states", "--schedules", "2000", "--quiet",
            ],
            environment: Self.selfTest, timeout: 300)
        #expect(wrong.status == 1, "\(wrong.stdout)\(wrong.stderr)")
        // Each is caught by what a state stream promises: I23, I24 or I25.
        for store in Self.wrongStateStreams {
            let row = Self.row(store, in: wrong.stdout)
            #expect(row.prefix(2) == [store, "violated"], "\(wrong.stdout)")
            let found = Set((row.dropFirst(2).first ?? "").split(separator: ",").map(String.init))
            #expect(!found.isEmpty && found.isSubset(of: ["I23", "I24", "I25"]), "\(store): \(row)")
        }
        // Correct streams that take their time — a debounce, the main queue — are waited for as
        // compare waits for them.
        let patient = try await ToolProcess.run(
            [
                "explore", "--stores", "states-debounced,states-main-queue", "--scenario", "session-states",
                "--schedules", "300", "--quiet",
            ],
            environment: Self.selfTest, timeout: 300)
        #expect(patient.status == 0, "\(patient.stdout)\(patient.stderr)")
        // Subscribers show in the interleaving with what they were sent.
        #expect(wrong.stdout.contains("sub 0 ← in g"), "\(wrong.stdout)")
        let replay = try #require(Self.replayArguments(in: wrong.stdout), "\(wrong.stdout)")
        let digest = try #require(Self.digest(in: wrong.stdout), "\(wrong.stdout)")
        let again = try await ToolProcess.run(replay + ["--quiet"], environment: Self.selfTest, timeout: 120)
        #expect(again.status == 1 && Self.digest(in: again.stdout) == digest, "\(again.stdout)")
    }
}

@Suite("Explored state streams")
struct ExploredStatesTests {
    static func event(_ kind: SessionEvent.Kind, from: Int64, to: Int64) -> SessionEvent {
        SessionEvent(account: 0, kind: kind, startedNanos: from, returnedNanos: to)
    }

    @Test("a refresh answered after the fence that ended its session returned is discarded; one answered before is not")
    func discardedRefreshes() throws {
        var ledger = Ledger()
        let events = [
            Self.event(.signIn(slot: 0, family: 1), from: 0, to: 10),
            Self.event(.signOut, from: 50, to: 60),
            Self.event(.signIn(slot: 1, family: 2), from: 70, to: 80),
        ]
        func refresh(family: UInt64, issued: UInt64, answered: Int64) {
            let index = ledger.append(
                at: TokenInstant(nanoseconds: 0), call: .refresh, family: family, presentedGeneration: issued - 1,
                outcome: .issued, issuedGeneration: issued, sentAt: answered - 5, context: "test")
            ledger.markResponded(index, at: answered, lost: false, expired: false)
        }
        refresh(family: 1, issued: 2, answered: 40)  // before the sign-out
        refresh(family: 1, issued: 3, answered: 55)  // while it runs: not yet discarded
        refresh(family: 1, issued: 4, answered: 65)  // after it returned
        refresh(family: 2, issued: 5, answered: 90)  // the next session's own
        #expect(Exploration.discarded(events, entries: ledger.entries) == [4])
    }
}
