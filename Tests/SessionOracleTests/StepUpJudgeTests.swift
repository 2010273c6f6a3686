import SessionContract
import SessionOracle
import Testing
import TokenServer

/// `step-up`'s judge on histories written by hand: a real server's ledger says which family each
/// access-token generation belongs to (family 1: user A's generations 1 and 2, family 2: user B's
/// generation 3); what the requests, prompt waiters and API objects got is chosen.
@Suite("The step-up judge, on histories written by hand")
struct StepUpJudgeTests {
    typealias Prompt = StepUpHistory.Prompt
    static let userA = Subject("clinic-user-a")
    static let userB = Subject("clinic-user-b")
    static let now = TokenInstant(nanoseconds: 10_000_000_000)

    static func ledger() async throws -> [LedgerEntry] {
        let server = TokenServer(configuration: .init(), clock: .manual(ManualTime()))
        let first = try await server.signIn(Credentials(subject: userA))
        _ = try await server.refresh(first.refreshToken)
        _ = try await server.signIn(Credentials(subject: userB))
        return server.ledger.entries
    }

    static func history(_ observations: [StepUpHistory.Observation], ended: [StepUpHistory.Ended] = [])
        async throws -> StepUpHistory
    {
        var history = StepUpHistory()
        history.observations = observations
        history.ended = ended
        history.ledger = try await ledger()
        return history
    }

    static func elevated(
        _ generation: UInt64, base: UInt64 = 2, subject: Subject = userA, expiresIn seconds: Int64 = 60
    ) -> ElevatedToken {
        ElevatedToken(
            value: "elevated-\(generation)", subject: subject, generation: generation, baseGeneration: base,
            expiresAt: TokenInstant(nanoseconds: now.nanoseconds + seconds * 1_000_000_000))
    }

    static func token(_ generation: UInt64, _ subject: Subject) -> AccessToken {
        AccessToken(
            value: "access-\(generation)", subject: subject, generation: generation,
            expiresAt: TokenInstant(nanoseconds: now.nanoseconds + 60_000_000_000))
    }

    /// User A signed in (family 1), nothing ended.
    static let userAIn = StepUpHistory.Session(subject: userA, family: 1, now: now, ended: 0)
    static func prompt(_ index: Int, shown: Int64, answered: Int64?, _ answer: SimulatedUser.Prompt.Answer?) -> Prompt {
        Prompt(index: index, context: "round 0: clinical burst", shownAt: shown, answeredAt: answered, answer: answer)
    }

    static func invariants(_ history: StepUpHistory) -> [Invariant] { StepUpJudge.judge(history).map(\.invariant) }

    @Test("one approved prompt for a crowd, all served one fresh elevated token of the session: no finding")
    func approvedCrowd() async throws {
        let history = try await Self.history([
            .independence(phase: "round 0", limit: .seconds(5), result: .success(())),
            .burst(
                phase: "round 0", requests: 10, results: Array(repeating: .success(Self.elevated(100)), count: 10),
                shown: [Self.prompt(0, shown: 1, answered: 5, .approved)], answer: .approved, session: Self.userAIn),
            .freshBurst(
                phase: "round 0 fresh", results: Array(repeating: .success(Self.elevated(100)), count: 4), shown: [],
                session: Self.userAIn),
        ])
        #expect(Self.invariants(history).isEmpty)
    }

    @Test("two prompts open at once for one crowd is I18; a prompt while a fresh token is held is I18")
    func twoPrompts() async throws {
        let history = try await Self.history([
            .burst(
                phase: "round 0", requests: 10, results: Array(repeating: .success(Self.elevated(100)), count: 10),
                shown: [
                    Self.prompt(0, shown: 1, answered: 5, .approved), Self.prompt(1, shown: 2, answered: 6, .approved),
                ],
                answer: .approved, session: Self.userAIn),
            .freshBurst(
                phase: "round 0 fresh", results: [.success(Self.elevated(101))],
                shown: [Self.prompt(2, shown: 7, answered: 8, .approved)], session: Self.userAIn),
        ])
        let findings = StepUpJudge.judge(history)
        #expect(findings.map(\.invariant) == [.promptSingleFlight, .promptSingleFlight])
        #expect(findings.first?.summary == "2 prompts at once for 10 concurrent clinical requests (round 0)")
    }

    @Test("a waiter of a denied prompt handed an elevated token is I19, and so is a crowd split between outcomes")
    func deniedNotShared() async throws {
        let history = try await Self.history([
            .burst(
                phase: "round 1", requests: 3,
                results: [.failure(.stepUpDenied), .failure(.stepUpDenied), .success(Self.elevated(100))],
                shown: [Self.prompt(0, shown: 1, answered: 5, .denied)], answer: .denied, session: Self.userAIn)
        ])
        let findings = StepUpJudge.judge(history)
        #expect(findings.map(\.invariant) == [.stepUpSharedNotSticky, .stepUpSharedNotSticky])
        #expect(findings.last?.summary == "a waiter of a denied prompt got an elevated token (round 1)")
    }

    @Test("a denial kept for a request that saw no prompt is I19; the denial itself owed to the crowd is none")
    func denialKept() async throws {
        let history = try await Self.history([
            .burst(
                phase: "round 1 after", requests: 1, results: [.failure(.stepUpDenied)], shown: [], answer: .approved,
                session: Self.userAIn)
        ])
        #expect(Self.invariants(history) == [.stepUpSharedNotSticky])
    }

    @Test("an elevated token of a session that ended, handed to a prompt's waiter after a switch, is I20")
    func elevationOutlivesSession() async throws {
        let userBIn = StepUpHistory.Session(subject: Self.userB, family: 2, now: Self.now, ended: 1)
        let history = try await Self.history(
            [
                .endedPrompt(
                    phase: "round 1: user switch during a prompt", ending: "another user signed in",
                    results: [.failure(.signedOut), .success(Self.elevated(100, base: 2, subject: Self.userA))],
                    session: userBIn)
            ], ended: [.init(family: 1, at: .max, round: 1)])
        let findings = StepUpJudge.judge(history)
        #expect(findings.map(\.invariant) == [.elevationEndsWithSession])
        #expect(findings.first?.summary.contains("bought in a session that had ended") == true)
    }

    @Test("an expired elevated token handed out is I4")
    func expired() async throws {
        let history = try await Self.history([
            .freshBurst(
                phase: "round 0 fresh", results: [.success(Self.elevated(100, expiresIn: -1))], shown: [],
                session: Self.userAIn)
        ])
        #expect(Self.invariants(history) == [.fresh])
    }

    @Test("a read and a 401 not back while a prompt is open is I21; one that failed is I12")
    func independence() async throws {
        let history = try await Self.history([
            .independence(phase: "round 0", limit: .seconds(5), result: nil),
            .independence(phase: "round 1", limit: .seconds(5), result: .failure(.signedOut)),
        ])
        #expect(Self.invariants(history) == [.stepUpIndependent, .served])
    }

    @Test("a cancelled request that got another error than 'cancelled' or the prompt's outcome is I11")
    func cancelled() async throws {
        let history = try await Self.history([
            .cancelled(
                phase: "round 0", results: [.failure(.cancelled), .failure(.stepUpDenied), .failure(.stepUpFailed)],
                answer: .denied, session: Self.userAIn)
        ])
        #expect(Self.invariants(history) == [.cancellationIsolated])
    }

    @Test("API objects with nobody signed in: a token is I22, an elevated token I20, a prompt I22")
    func clientsSignedOut() async throws {
        let history = try await Self.history([
            .clientsSignedOut(
                when: "after sign-out (round 0)",
                calls: [
                    (0, .base(.failure(.signedOut))), (0, .elevated(.failure(.signedOut))),
                    (1, .base(.success(Self.token(2, Self.userA)))), (1, .elevated(.success(Self.elevated(100)))),
                ], prompted: true)
        ])
        let findings = StepUpJudge.judge(history)
        #expect(findings.map(\.invariant) == [.clientFollowsSession, .elevationEndsWithSession, .clientFollowsSession])
        #expect(findings.last?.summary == "the user was prompted after sign-out (round 0), with nobody signed in")
    }

    @Test("an API object made before sign-in serving the previous user's token after a switch is I22")
    func clientsServePreviousUser() async throws {
        let userBIn = StepUpHistory.Session(subject: Self.userB, family: 2, now: Self.now, ended: 1)
        let history = try await Self.history(
            [
                .clientsServe(
                    round: 1, kept: 4,
                    results: [.success(Self.token(3, Self.userB)), .success(Self.token(2, Self.userA))],
                    session: userBIn)
            ], ended: [.init(family: 1, at: .max, round: 1)])
        let findings = StepUpJudge.judge(history)
        #expect(findings.map(\.invariant) == [.clientFollowsSession])
        #expect(
            findings.first?.summary
                == "an API object made before sign-in returned the previous user's token after a sign-in (round 1)")
    }

    @Test("a server call for a session after its sign-out returned is I22")
    func callAfterEnd() async throws {
        // Family 1's refresh was sent after the instant recorded as its end.
        let ledger = try await Self.ledger()
        let refresh = try #require(ledger.first { $0.call == .refresh })
        var history = StepUpHistory()
        history.ledger = ledger
        history.ended = [.init(family: 1, at: refresh.sentAt - 1, round: 0)]
        let findings = StepUpJudge.judge(history)
        #expect(findings.map(\.invariant) == [.clientFollowsSession])
        history.ended = [.init(family: 1, at: refresh.sentAt, round: 0)]
        #expect(StepUpJudge.judge(history).isEmpty)
    }

    @Test("a token of a session that ended only later is 'another session's' when it was handed out")
    func endedAfterTheObservation() async throws {
        // User B's session (family 2) is signed in; user A's family 1 ends after this observation.
        let userBIn = StepUpHistory.Session(subject: Self.userB, family: 2, now: Self.now, ended: 0)
        let history = try await Self.history(
            [
                .freshBurst(
                    phase: "round 1 fresh", results: [.success(Self.elevated(100, base: 2, subject: Self.userB))],
                    shown: [], session: userBIn),
                .clientsServe(round: 1, kept: 4, results: [.success(Self.token(2, Self.userB))], session: userBIn),
            ], ended: [.init(family: 1, at: .max, round: 2)])
        let findings = StepUpJudge.judge(history)
        #expect(findings.map(\.invariant) == [.elevationEndsWithSession, .clientFollowsSession])
        #expect(findings.first?.summary == "an elevated token bought in another session was handed out (round 1 fresh)")
        #expect(
            findings.last?.summary
                == "an API object made before sign-in returned another session's token after a sign-in (round 1)")
    }

    @Test("a dismissal kept for a request that saw no prompt is I19; a second prompt after an approval is I18")
    func answerKeptAndPromptAgain() async throws {
        let history = try await Self.history([
            .burst(
                phase: "round 2 after", requests: 1, results: [.failure(.stepUpDismissed)], shown: [],
                answer: .dismissed, session: Self.userAIn),
            .burst(
                phase: "round 3", requests: 4, results: Array(repeating: .success(Self.elevated(101)), count: 4),
                shown: [
                    Self.prompt(4, shown: 1, answered: 2, .approved), Self.prompt(5, shown: 3, answered: 4, .approved),
                ],
                answer: .approved, session: Self.userAIn),
        ])
        let findings = StepUpJudge.judge(history)
        #expect(findings.map(\.invariant) == [.stepUpSharedNotSticky, .promptSingleFlight])
        #expect(findings.first?.summary.contains("an earlier answer was kept") == true)
        #expect(findings.last?.trace.last == "prompt #5 came after approved prompt #4")
    }

    @Test(
        "a prompt waiter told something else than 'signed out' when its session ended is I20; a fresh burst's failure is I12"
    )
    func endedPromptOtherError() async throws {
        let signedOut = StepUpHistory.Session(subject: Self.userA, family: 0, now: Self.now, ended: 1)
        let history = try await Self.history(
            [
                .endedPrompt(
                    phase: "round 0: sign-out during a prompt", ending: "the session ended",
                    results: [.failure(.signedOut), .failure(.stepUpDenied)], session: signedOut),
                .freshBurst(
                    phase: "round 1 fresh", results: [.failure(.stepUpFailed)], shown: [], session: Self.userAIn),
            ], ended: [.init(family: 1, at: .max, round: 0)])
        #expect(Self.invariants(history) == [.elevationEndsWithSession, .served])
    }
}
