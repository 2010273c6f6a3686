import Foundation
import SessionContract
import Testing

@testable import SessionBench
@testable import SessionBenchCLI
@testable import SessionOracle
@testable import TokenServer

extension ExploreCommandTests {
    /// Wrong step-up stores: the reference-broken per-client store and the self-test ones.
    static let wrongStepUps = [
        "step-up-per-client", "step-up-check-then-prompt", "step-up-sticky-denial", "step-up-cancelled-as-dismissed",
        "step-up-survives-switch", "step-up-one-auth-queue", "step-up-token-capturing-client",
        "step-up-first-waiter-only", "step-up-waiter-timeout", "step-up-per-user-cache", "step-up-uncancelled-flight",
    ]

    @Test("step-up: every store with step-up passes; each wrong one is caught, and its string replays it")
    func stepUp() async throws {
        let correct = try await ToolProcess.run(
            ["explore", "--scenario", "step-up", "--schedules", "300", "--quiet"], timeout: 300)
        #expect(correct.status == 0, "\(correct.stdout)\(correct.stderr)")
        for store in [
            "lock-free-read", "mutex", "nslock", "actor-task", "actor-fast-read", "barrier-queue", "serial-queue",
        ] {
            #expect(Self.row(store, in: correct.stdout).prefix(3) == [store, "pass", "300"], "\(correct.stdout)")
        }
        // A store without step-up is left out by default, and refused by name.
        #expect(Self.row("main-actor", in: correct.stdout).isEmpty, "\(correct.stdout)")
        let refused = try await ToolProcess.run(
            ["explore", "--scenario", "step-up", "--stores", "main-actor"], timeout: 60)
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(refused.stderr.contains("main-actor does not declare step-up (offersStepUp)"), "\(refused.stderr)")
        let wrong = try await ToolProcess.run(
            [
                "explore", "--stores", Self.wrongStepUps.joined(separator: ","), "--scenario", "step-up",
                "--schedules", "2000", "--quiet",
            ],
            environment: Self.selfTest, timeout: 300)
        #expect(wrong.status == 1, "\(wrong.stdout)\(wrong.stderr)")
        for store in Self.wrongStepUps {
            #expect(Self.row(store, in: wrong.stdout).prefix(2) == [store, "violated"], "\(wrong.stdout)")
        }
        // Prompts show in the interleaving, in a column of their own.
        #expect(wrong.stdout.contains("prompt #0"), "\(wrong.stdout)")
        let replay = try #require(Self.replayArguments(in: wrong.stdout), "\(wrong.stdout)")
        let digest = try #require(Self.digest(in: wrong.stdout), "\(wrong.stdout)")
        let again = try await ToolProcess.run(replay + ["--quiet"], environment: Self.selfTest, timeout: 120)
        #expect(again.status == 1 && Self.digest(in: again.stdout) == digest, "\(again.stdout)")
    }
}

/// ``StepUpModelJudge`` on histories written by hand: what it reports, and what it excuses.
@Suite("Step-up model judge")
struct StepUpModelJudgeTests {
    static let lifetime = Duration.seconds(60)
    static let at = TokenInstant(nanoseconds: 1_000_000_000)

    /// One user signed in from 0 to 10, and for good unless `ended`.
    static func timeline(
        ended: SessionEvent? = nil, more: [SessionEvent] = [], elevations: [(issued: UInt64, family: UInt64)] = []
    ) -> SessionTimeline {
        var ledger = Ledger()
        let signIn = ledger.append(
            at: at, call: .signIn, family: 1, presentedGeneration: nil, outcome: .issued, issuedGeneration: 1,
            sentAt: 2, context: "test")
        ledger.markResponded(signIn, at: 8, lost: false, expired: false)
        if more.contains(where: { $0.family == 2 }) {
            let second = ledger.append(
                at: at, call: .signIn, family: 2, presentedGeneration: nil, outcome: .issued, issuedGeneration: 2,
                sentAt: 502, context: "test")
            ledger.markResponded(second, at: 508, lost: false, expired: false)
        }
        for (issued, family) in elevations {
            let index = ledger.append(
                at: at, call: .elevate, family: family, presentedGeneration: family, outcome: .issued,
                issuedGeneration: issued, sentAt: 20, context: "test")
            ledger.markResponded(index, at: 30, lost: false, expired: false)
        }
        let events =
            [SessionEvent(account: 0, kind: .signIn(slot: 0, family: 1), startedNanos: 0, returnedNanos: 10)]
            + (ended.map { [$0] } ?? []) + more
        return SessionTimeline(events: events, entries: ledger.entries, issued: [:])
    }

    static func call(
        _ from: Int64, _ to: Int64, _ answer: ElevationRecord.Answer, caller: Int = 0, cancelled: Bool = false
    ) -> ElevationRecord {
        ElevationRecord(
            caller: caller, phase: "test", startedNanos: from, endedNanos: to, startedAt: at, endedAt: at,
            answer: answer, wasCancelled: cancelled)
    }

    static func prompt(
        _ index: Int, shown: Int64, answered: Int64?, _ answer: SimulatedUser.Prompt.Answer, stuck: Int = 0
    ) -> PromptRecord {
        var prompt = PromptRecord(
            index: index, slot: 0, phase: "test", shownNanos: shown, shownAt: at, patient: stuck > 0)
        prompt.answeredNanos = answered
        prompt.answer = answer
        prompt.stuck = stuck
        return prompt
    }

    static func judge(
        _ calls: [ElevationRecord], _ prompts: [PromptRecord], _ timeline: SessionTimeline
    ) -> [Invariant] {
        StepUpModelJudge.judge(elevations: calls, prompts: prompts, timeline: timeline, lifetime: lifetime)
            .map(\.invariant)
    }

    static let elevated = ElevationRecord.Answer.elevated(
        generation: 5, baseGeneration: 1, expiresAt: at + .seconds(60))

    @Test("a denial told to a request that began after every waiter of the denied prompt had returned is kept: I19")
    func stickyDenial() {
        let prompts = [Self.prompt(0, shown: 20, answered: 30, .denied)]
        let waiter = Self.call(15, 35, .error(.stepUpDenied))
        #expect(Self.judge([waiter], prompts, Self.timeline()).isEmpty)
        // One that joined before the last waiter had its answer shares it.
        let late = Self.call(32, 36, .error(.stepUpDenied), caller: 1)
        #expect(Self.judge([waiter, late], prompts, Self.timeline()).isEmpty)
        let kept = Self.call(40, 41, .error(.stepUpDenied), caller: 1)
        #expect(Self.judge([waiter, kept], prompts, Self.timeline()) == [.stepUpSharedNotSticky])
        // A cancelled request told an answer nobody gave: I11.
        let invented = Self.call(15, 25, .error(.stepUpDismissed), caller: 2, cancelled: true)
        #expect(Self.judge([waiter, invented], prompts, Self.timeline()) == [.cancellationIsolated])
    }

    @Test("two prompts open at once for one session are I18; across a sign-in under way they are not")
    func twoPrompts() {
        let calls = [Self.call(15, 60, .error(.stepUpDenied)), Self.call(16, 60, .error(.stepUpDenied), caller: 1)]
        let overlapping = [
            Self.prompt(0, shown: 20, answered: 50, .denied), Self.prompt(1, shown: 25, answered: 55, .denied),
        ]
        #expect(Self.judge(calls, overlapping, Self.timeline()) == [.promptSingleFlight])
        let apart = [
            Self.prompt(0, shown: 20, answered: 30, .denied), Self.prompt(1, shown: 35, answered: 55, .denied),
        ]
        #expect(Self.judge(calls, apart, Self.timeline()).isEmpty)
        let resigned = SessionEvent(
            account: 0, kind: .signIn(slot: 0, family: 3), startedNanos: 22, returnedNanos: 24)
        #expect(Self.judge(calls, overlapping, Self.timeline(more: [resigned])).isEmpty)
    }

    @Test("an elevated token of a session that had ended before the call began is I20; during it, it is not")
    func endedSession() {
        let signOut = SessionEvent(account: 0, kind: .signOut, startedNanos: 100, returnedNanos: 110)
        let timeline = Self.timeline(ended: signOut, elevations: [(5, 1)])
        #expect(Self.judge([Self.call(40, 105, Self.elevated)], [], timeline).isEmpty)
        #expect(Self.judge([Self.call(120, 130, Self.elevated)], [], timeline) == [.elevationEndsWithSession])
    }

    @Test("every request under way when a settled prompt was answered gets its outcome: a later prompt's is I19")
    func settledWaiters() {
        var settled = Self.prompt(0, shown: 20, answered: 30, .denied)
        settled.settled = true
        let later = Self.prompt(1, shown: 40, answered: 45, .approved)
        let timeline = Self.timeline(elevations: [(5, 1)])
        let shared = [Self.call(10, 35, .error(.stepUpDenied)), Self.call(15, 36, .error(.stepUpDenied), caller: 1)]
        #expect(Self.judge(shared, [settled, later], timeline).isEmpty)
        // The second waiter prompted again instead, and got that prompt's token.
        let split = [Self.call(10, 35, .error(.stepUpDenied)), Self.call(15, 50, Self.elevated, caller: 1)]
        #expect(Self.judge(split, [settled, later], timeline) == [.stepUpSharedNotSticky])
        // Not settled: it may have joined late.
        #expect(Self.judge(split, [Self.prompt(0, shown: 20, answered: 30, .denied), later], timeline).isEmpty)
    }

    @Test("a prompt while a handed-out elevated token was fresh is I18; a read stuck on a patient prompt is I21")
    func freshAndStuck() {
        let timeline = Self.timeline(elevations: [(5, 1)])
        let first = Self.call(15, 40, Self.elevated)
        #expect(Self.judge([first], [Self.prompt(0, shown: 20, answered: 25, .approved)], timeline).isEmpty)
        let again = Self.call(50, 70, Self.elevated, caller: 1)
        let prompts = [
            Self.prompt(0, shown: 20, answered: 25, .approved), Self.prompt(1, shown: 55, answered: 60, .approved),
        ]
        #expect(Self.judge([first, again], prompts, timeline) == [.promptSingleFlight])
        let stuck = [Self.prompt(0, shown: 20, answered: 25, .approved, stuck: 1)]
        #expect(Self.judge([first], stuck, timeline) == [.stepUpIndependent])
    }
}
