import Foundation
import SessionContract
import Testing

@testable import SessionBench
@testable import SessionBenchCLI
@testable import SessionOracle
@testable import TokenServer

extension ExploreCommandTests {
    @Test(
        "crash-restart: every store that keeps its session passes; one that restores a session it cannot refresh is found only with a crash, and replays"
    )
    func crashRestart() async throws {
        let correct = try await ToolProcess.run(
            ["explore", "--scenario", "crash-restart", "--schedules", "300", "--quiet"], timeout: 300)
        #expect(correct.status == 0, "\(correct.stdout)\(correct.stderr)")
        for store in ["lock-free-read", "mutex", "nslock", "barrier-queue", "serial-queue"] {
            #expect(Self.row(store, in: correct.stdout).prefix(3) == [store, "pass", "300"], "\(correct.stdout)")
        }
        // A store that keeps no session is left out.
        #expect(Self.row("actor-task", in: correct.stdout).isEmpty, "\(correct.stdout)")
        let store = "restores-without-refresh-token"
        let generated = try await ToolProcess.run(
            ["explore", "--stores", store, "--scenario", "generated", "--schedules", "300", "--quiet"],
            environment: Self.selfTest, timeout: 300)
        #expect(Self.row(store, in: generated.stdout).prefix(2) == [store, "pass"], "\(generated.stdout)")
        let crashed = try await ToolProcess.run(
            ["explore", "--stores", store, "--scenario", "crash-restart", "--schedules", "2000"],
            environment: Self.selfTest, timeout: 300)
        #expect(crashed.status == 1, "\(crashed.stdout)\(crashed.stderr)")
        #expect(Self.row(store, in: crashed.stdout).prefix(2) == [store, "violated"], "\(crashed.stdout)")
        #expect(crashed.stdout.contains("crash and restart"), "\(crashed.stdout)")
        let replay = try #require(Self.replayArguments(in: crashed.stdout), "\(crashed.stdout)")
        let digest = try #require(Self.digest(in: crashed.stdout), "\(crashed.stdout)")
        let again = try await ToolProcess.run(replay + ["--quiet"], environment: Self.selfTest, timeout: 120)
        #expect(again.status == 1 && Self.digest(in: again.stdout) == digest, "\(again.stdout)")
    }
}

@Suite("Explored crashes")
struct ExploredCrashTests {
    @Test(
        "a grant on its way when the process died was never the client's: presenting its refresh token again is no reuse of the store's"
    )
    func lostInCrash() {
        var ledger = Ledger()
        let at = TokenInstant(nanoseconds: 0)
        let rotated = ledger.append(
            at: at, call: .refresh, family: 1, presentedGeneration: 1, outcome: .issued, issuedGeneration: 2,
            sentAt: 10, context: "test")
        let refused = ledger.append(
            at: at, call: .refresh, family: 2, presentedGeneration: 5, outcome: .familyRevoked, issuedGeneration: nil,
            sentAt: 12, context: "test")
        ledger.loseInCrash(rotated, at: 20)
        ledger.loseInCrash(refused, at: 20)
        #expect(ledger.entries[rotated].outcome == .responseLost && !ledger.entries[rotated].boughtGrant)
        #expect(ledger.entries[rotated].respondedAt == 20 && !ledger.entries[rotated].deliveredGrant)
        // The same refresh token presented again, by the restarted process: excused.
        let again = ledger.append(
            at: at, call: .refresh, family: 1, presentedGeneration: 1, outcome: .reuseDetected, issuedGeneration: nil,
            sentAt: 30, context: "test")
        ledger.markResponded(again, at: 31, lost: false, expired: false)
        #expect(Oracle.ledgerFindings(ledger.entries, observed: { _ in false }).isEmpty)
        // A refusal that never reached the client tells it nothing.
        let events = [
            SessionEvent(account: 0, kind: .signIn(slot: 0, family: 2), startedNanos: 0, returnedNanos: 5)
        ]
        let timeline = SessionTimeline(events: events, entries: ledger.entries, issued: [:])
        #expect(timeline.sessions[2]?.refusedAt == nil)
        // Answered before the crash, the same grant was the client's.
        var kept = Ledger()
        let delivered = kept.append(
            at: at, call: .refresh, family: 1, presentedGeneration: 1, outcome: .issued, issuedGeneration: 2,
            sentAt: 10, context: "test")
        kept.markResponded(delivered, at: 15, lost: false, expired: false)
        kept.loseInCrash(delivered, at: 20)
        #expect(kept.entries[delivered].boughtGrant && kept.entries[delivered].respondedAt == 15)
    }

    @Test("a call a restart cut is not judged; a refusal the old process heard binds none of the new one's calls")
    func cutCalls() {
        var judge = ContractJudge(skew: .seconds(1))
        judge.restarts = [100]
        func call(_ from: Int64, _ to: Int64) -> ObservedCall {
            ObservedCall(
                caller: 0, account: 0, kind: .read, phase: "test", startedAt: TokenInstant(nanoseconds: 0),
                startedNanos: from, endedNanos: to, answer: .error(.signedOut), wasCancelled: false)
        }
        #expect(judge.cut(call(90, 110)))
        #expect(!judge.cut(call(90, 95)) && !judge.cut(call(105, 110)))
        #expect(judge.restarted(after: 50, by: 150) && !judge.restarted(after: 120, by: 150))
    }
}
