import SessionContract
import TokenServer

/// What a `step-up` run recorded: what each burst of clinical requests, each kept API object and
/// each prompt waiter got, with the session signed in at the time; the sessions the driver ended;
/// and the server's ledger.
package struct StepUpHistory: Sendable {
    /// One call of a clinical request or an API object: an elevated token's, or a base token's.
    package enum Call: Sendable {
        case elevated(Result<ElevatedToken, SessionError>)
        case base(Result<AccessToken, SessionError>)
    }

    /// A prompt the user was shown.
    package struct Prompt: Sendable {
        package let index: Int
        /// What the harness was doing when it appeared.
        package let context: String
        /// When it appeared and when it was answered, in real monotonic nanoseconds.
        package let shownAt: Int64
        package let answeredAt: Int64?
        package let answer: SimulatedUser.Prompt.Answer?

        package init(
            index: Int, context: String, shownAt: Int64, answeredAt: Int64? = nil,
            answer: SimulatedUser.Prompt.Answer? = nil
        ) {
            self.index = index
            self.context = context
            self.shownAt = shownAt
            self.answeredAt = answeredAt
            self.answer = answer
        }

        package init(_ prompt: SimulatedUser.Prompt) {
            self.init(
                index: prompt.index, context: prompt.context, shownAt: prompt.shownAt, answeredAt: prompt.answeredAt,
                answer: prompt.answer)
        }
    }

    /// The session when an observation was made: the user the driver signed in last, the family
    /// of the session signed in (0: none), the store's clock, and how many sessions had ended.
    package struct Session: Sendable {
        package let subject: Subject
        package let family: UInt64
        package let now: TokenInstant
        package let ended: Int

        package init(subject: Subject, family: UInt64, now: TokenInstant, ended: Int) {
            self.subject = subject
            self.family = family
            self.now = now
            self.ended = ended
        }
    }

    /// A session the driver ended: its family, when its sign-out (or the sign-in over it)
    /// returned, in real nanoseconds, and the round.
    package struct Ended: Sendable {
        package let family: UInt64
        package let at: Int64
        package let round: Int

        package init(family: UInt64, at: Int64, round: Int) {
            self.family = family
            self.at = at
            self.round = round
        }
    }

    /// What the driver saw, in the order it saw it.
    package enum Observation: Sendable {
        /// A burst of `requests` clinical requests with no fresh elevated token, its prompt held
        /// open until they had arrived and answered `answer`; `shown`: the prompts shown from
        /// its start until its requests were back.
        case burst(
            phase: String, requests: Int, results: [Result<ElevatedToken, SessionError>], shown: [Prompt],
            answer: SimulatedUser.Prompt.Answer, session: Session)
        /// A burst while an elevated token was fresh; `shown`: the prompts it brought.
        case freshBurst(
            phase: String, results: [Result<ElevatedToken, SessionError>], shown: [Prompt], session: Session)
        /// Requests whose tasks were cancelled while a prompt answered `answer` was open.
        case cancelled(
            phase: String, results: [Result<ElevatedToken, SessionError>], answer: SimulatedUser.Prompt.Answer,
            session: Session)
        /// A token read (the store's and two API objects'), then a 401, while a prompt was open:
        /// what they got, or `nil` when they were not back within `limit`.
        case independence(phase: String, limit: Duration, result: Result<Void, SessionError>?)
        /// The waiters of a prompt whose session ended (`ending`) while it was open.
        case endedPrompt(
            phase: String, ending: String, results: [Result<ElevatedToken, SessionError>], session: Session)
        /// Every kept API object's base and elevated token, with nobody signed in (`when`);
        /// `prompted`: whether the user was prompted meanwhile.
        case clientsSignedOut(when: String, calls: [(client: Int, call: Call)], prompted: Bool)
        /// Every kept API object's token after a sign-in; the first `kept` were made before any.
        case clientsServe(round: Int, kept: Int, results: [Result<AccessToken, SessionError>], session: Session)
    }

    package var observations: [Observation] = []
    package var ended: [Ended] = []
    /// Every call the server saw.
    package var ledger: [LedgerEntry] = []

    package init() {}

    /// The family that issued `generation` (0: none).
    package static func family(of generation: UInt64, in ledger: [LedgerEntry]) -> UInt64 {
        ledger.last { $0.issuedGeneration == generation }?.family ?? 0
    }

    /// Whether `token` is the signed-in session's, as `session` says.
    package static func serves(_ token: AccessToken, _ session: Session, ledger: [LedgerEntry]) -> Bool {
        token.subject == session.subject && family(of: token.generation, in: ledger) == session.family
    }
}

/// The promises of ``StepUpSessionStore`` over a `step-up` history: one prompt for a crowd and an
/// answer that holds for it (I18, I19), no elevated token outliving its session (I20), the session
/// going on while a prompt is open (I21), API objects that follow the session and no server call
/// for an ended one (I22), an elevated token fresh when handed out (I4), a cancellation that
/// touches only its own request (I11), and a signed-in user's requests served (I12).
package enum StepUpJudge {
    package typealias Finding = ContractJudge.Finding

    package static func judge(_ history: StepUpHistory) -> [Finding] {
        var judge = Judgement(history: history)
        for observation in history.observations { judge.judge(observation) }
        judge.endedSessions()
        return judge.findings
    }

    /// The error every waiter of a prompt answered `answer` is owed; `nil` when approved.
    package static func owed(_ answer: SimulatedUser.Prompt.Answer) -> SessionError? {
        switch answer {
        case .approved: nil
        case .denied: .stepUpDenied
        case .dismissed: .stepUpDismissed
        }
    }

    struct Judgement {
        let history: StepUpHistory
        var findings: [Finding] = []

        mutating func report(_ invariant: Invariant, _ summary: String, trace: [String] = []) {
            findings.append(Finding(invariant: invariant, summary: summary, trace: trace))
        }

        func familyOf(_ generation: UInt64) -> UInt64 { StepUpHistory.family(of: generation, in: history.ledger) }

        mutating func judge(_ observation: StepUpHistory.Observation) {
            switch observation {
            case .burst(let phase, let requests, let results, let shown, let answer, let session):
                burst(
                    phase: phase, requests: requests, results: results, shown: shown, answer: answer, session: session)
            case .freshBurst(let phase, let results, let shown, let session):
                freshBurst(phase: phase, results: results, shown: shown, session: session)
            case .cancelled(let phase, let results, let answer, let session):
                cancelled(results, answer: answer, phase: phase, session: session)
            case .independence(let phase, let limit, let result):
                independence(phase: phase, limit: limit, result: result)
            case .endedPrompt(let phase, let ending, let results, let session):
                endedPrompt(results, ending: ending, phase: phase, session: session)
            case .clientsSignedOut(let when, let calls, let prompted):
                clientsSignedOut(when: when, calls: calls, prompted: prompted)
            case .clientsServe(let round, let kept, let results, let session):
                clientsServe(round: round, kept: kept, results: results, session: session)
            }
        }

        static func trace(_ prompts: [StepUpHistory.Prompt]) -> [String] {
            prompts.prefix(3).map { "prompt #\($0.index) [\($0.context)]: \($0.answer?.rawValue ?? "unanswered")" }
        }

        static func describe(_ outcome: Result<UInt64, SessionError>) -> String {
            switch outcome {
            case .success(let generation): "elevated token generation \(generation)"
            case .failure(let error): "'\(error)'"
            }
        }

        /// A burst's prompts (those shown while its first was open: a request that arrived after
        /// a denial or a dismissal was answered rightly prompts again, I19), and what its crowd
        /// got against what the prompt's answer should give everyone.
        mutating func burst(
            phase: String, requests: Int, results: [Result<ElevatedToken, SessionError>],
            shown: [StepUpHistory.Prompt], answer: SimulatedUser.Prompt.Answer, session: StepUpHistory.Session
        ) {
            let firstAnswered = shown.first?.answeredAt ?? .max
            let prompts = shown.count { $0.shownAt <= firstAnswered }
            if prompts > 1 {
                report(
                    .promptSingleFlight,
                    "\(prompts) prompts at once for \(requests) concurrent clinical requests (\(phase))",
                    trace: Self.trace(shown))
            } else if let approved = shown.first(where: { $0.answer == .approved }),
                let again = shown.first(where: { $0.index > approved.index })
            {
                report(
                    .promptSingleFlight,
                    "a prompt after the user had approved one, with the elevated token fresh (\(phase))",
                    trace: Self.trace(shown) + ["prompt #\(again.index) came after approved prompt #\(approved.index)"])
            }
            crowd(results, prompts: shown.count, answer: answer, phase: phase, session: session)
        }

        /// What the crowd of one burst got, against what its prompt's answer should give everyone.
        mutating func crowd(
            _ results: [Result<ElevatedToken, SessionError>], prompts: Int, answer: SimulatedUser.Prompt.Answer,
            phase: String, session: StepUpHistory.Session
        ) {
            let distinct = Set(results.map { $0.map(\.generation) })
            if prompts == 1, distinct.count > 1 {
                report(
                    .stepUpSharedNotSticky,
                    "the \(results.count) waiters of one prompt got \(distinct.count) different outcomes (\(phase))",
                    trace: distinct.prefix(4).map { Self.describe($0) })
            }
            let expected = StepUpJudge.owed(answer)
            for result in results {
                switch result {
                case .success(let token):
                    if let expected, prompts == 1 {
                        report(
                            .stepUpSharedNotSticky,
                            "a waiter of a \(expected == .stepUpDenied ? "denied" : "dismissed") prompt got an elevated token (\(phase))"
                        )
                    }
                    elevated(token, phase: phase, session: session)
                case .failure(let error) where error == expected && prompts == 0:
                    report(
                        .stepUpSharedNotSticky,
                        "a clinical request failed with '\(error)' with no prompt shown: an earlier answer was kept (\(phase))"
                    )
                case .failure(let error) where error == expected:
                    break
                case .failure(let error) where expected == nil && prompts == 0 && error.isStepUp:
                    report(
                        .stepUpSharedNotSticky,
                        "a clinical request failed with '\(error)' with no prompt shown: an earlier denial was kept (\(phase))"
                    )
                case .failure(let error):
                    report(
                        .served, "a clinical request of a signed-in user failed with '\(error)' (\(phase))",
                        trace: ["the prompt was answered: \(answer.rawValue); prompts shown: \(prompts)"])
                }
            }
        }

        /// A burst while the elevated token was fresh: no prompt, every request served.
        mutating func freshBurst(
            phase: String, results: [Result<ElevatedToken, SessionError>], shown: [StepUpHistory.Prompt],
            session: StepUpHistory.Session
        ) {
            if !shown.isEmpty {
                report(
                    .promptSingleFlight, "\(shown.count) prompt(s) while a fresh elevated token was held (\(phase))",
                    trace: Self.trace(shown))
            }
            for result in results {
                switch result {
                case .success(let token): elevated(token, phase: phase, session: session)
                case .failure(let error):
                    report(
                        .served, "a clinical request with a fresh elevated token held failed with '\(error)' (\(phase))"
                    )
                }
            }
        }

        /// An elevated token handed out must be fresh and belong to the signed-in user's session.
        mutating func elevated(_ token: ElevatedToken, phase: String, session: StepUpHistory.Session) {
            let elevated = token
            let owner = familyOf(elevated.baseGeneration)
            if elevated.subject != session.subject || owner != session.family {
                let ended = history.ended.prefix(session.ended).contains { $0.family == owner }
                let whose = ended ? "a session that had ended" : "another session"
                report(
                    .elevationEndsWithSession,
                    "an elevated token bought in \(whose) was handed out (\(phase))",
                    trace: [
                        "elevated \(elevated) bought with access-token generation \(elevated.baseGeneration) of family \(owner); the signed-in session is family \(session.family)"
                    ])
            } else if !elevated.isFresh(at: session.now) {
                report(.fresh, "an expired elevated token was handed out (\(phase))", trace: ["\(elevated)"])
            }
        }

        /// Requests cancelled while a prompt was open: each returned (their hang is I3), with
        /// `cancelled` or what the prompt gave; any other answer is one they were not owed.
        mutating func cancelled(
            _ results: [Result<ElevatedToken, SessionError>], answer: SimulatedUser.Prompt.Answer, phase: String,
            session: StepUpHistory.Session
        ) {
            let owed = StepUpJudge.owed(answer)
            for result in results {
                switch result {
                case .failure(.cancelled): break
                case .failure(let error) where error == owed: break
                case .success(let token): elevated(token, phase: phase, session: session)
                case .failure(let error):
                    report(
                        .cancellationIsolated,
                        "a clinical request cancelled while the prompt was open got '\(error)', neither 'cancelled' nor the prompt's outcome (\(phase))",
                        trace: ["the prompt was \(answer.rawValue); only the request's own task was cancelled"])
                }
            }
        }

        /// The session goes on while a prompt is open: a read and a 401 complete, and succeed.
        mutating func independence(phase: String, limit: Duration, result: Result<Void, SessionError>?) {
            switch result {
            case nil:
                report(
                    .stepUpIndependent,
                    "a token read (from the store and from API objects, one of them waiting on the prompt) and a 401 of the signed-in session did not complete within \(limit) while a step-up prompt was open (\(phase))",
                    trace: ["the prompt is shown and unanswered; the session's own token needs no prompt"])
            case .success?: break
            case .failure(let error)?:
                report(.served, "a token read or 401 failed with '\(error)' while a step-up prompt was open (\(phase))")
            }
        }

        /// The waiters of a prompt whose session ended while it was open: `signedOut`, or an
        /// elevated token of the session signed in now (never the ended one's).
        mutating func endedPrompt(
            _ results: [Result<ElevatedToken, SessionError>], ending: String, phase: String,
            session: StepUpHistory.Session
        ) {
            for result in results {
                switch result {
                case .failure(.signedOut): break
                case .success(let token): elevated(token, phase: phase, session: session)
                case .failure(let error):
                    report(
                        .elevationEndsWithSession,
                        "a clinical request waiting on the prompt got '\(error)', not 'signed out', when \(ending) (\(phase))"
                    )
                }
            }
        }

        /// The kept API objects, with nobody signed in: every call fails with `signedOut`, no prompt.
        mutating func clientsSignedOut(when: String, calls: [(client: Int, call: StepUpHistory.Call)], prompted: Bool) {
            for (index, call) in calls {
                switch call {
                case .base(.failure(.signedOut)), .elevated(.failure(.signedOut)): break
                case .base(.success(let token)):
                    report(
                        .clientFollowsSession, "an API object returned a token \(when), with nobody signed in",
                        trace: ["API object \(index): \(token) of family \(familyOf(token.generation))"])
                case .elevated(.success(let elevated)):
                    report(
                        .elevationEndsWithSession,
                        "an API object returned an elevated token \(when), with nobody signed in",
                        trace: ["API object \(index): \(elevated)"])
                case .base(.failure(let error)), .elevated(.failure(let error)):
                    report(
                        .clientFollowsSession,
                        "an API object's call \(when) failed with '\(error)', not 'signed out' as the contract says")
                }
            }
            if prompted { report(.clientFollowsSession, "the user was prompted \(when), with nobody signed in") }
        }

        /// The kept API objects, made before sign-in, serve the user signed in now.
        mutating func clientsServe(
            round: Int, kept: Int, results: [Result<AccessToken, SessionError>], session: StepUpHistory.Session
        ) {
            for (index, result) in results.enumerated() {
                switch result {
                case .success(let token) where StepUpHistory.serves(token, session, ledger: history.ledger):
                    break
                case .success(let token):
                    let owner = familyOf(token.generation)
                    let ended = history.ended.prefix(session.ended).contains { $0.family == owner }
                    let whose = ended || token.subject != session.subject ? "the previous user's" : "another session's"
                    report(
                        .clientFollowsSession,
                        "an API object made \(index < kept ? "before sign-in" : "in an earlier session") returned \(whose) token after a sign-in (round \(round))",
                        trace: [
                            "API object \(index): \(token) of family \(owner); the signed-in session is family \(session.family)"
                        ])
                case .failure(let error):
                    report(
                        .clientFollowsSession,
                        "an API object made before sign-in failed with '\(error)' with a user signed in (round \(round))"
                    )
                }
            }
        }

        /// No server call for a session after its sign-out returned: nothing holds it alive.
        mutating func endedSessions() {
            for session in history.ended {
                let late = history.ledger.filter {
                    $0.family == session.family && $0.call != .signIn && $0.sentAt > session.at
                }
                if let first = late.first {
                    report(
                        .clientFollowsSession,
                        "\(late.count) server call(s) for a session after its sign-out returned: something kept it alive",
                        trace: [Oracle.describe(first)])
                }
            }
        }
    }
}
