import SessionContract
import SessionOracle
import SessionSync
import TokenServer

/// What `step-up` checks: a burst's outcomes, elevated tokens, API objects across sessions,
/// and the server calls of ended sessions.
extension StepUpSession {
    /// What the crowd of one burst got, against what its prompt's answer should give everyone.
    func judge(
        _ results: [Result<ElevatedToken, SessionError>], prompts: Int, answer: SimulatedUser.Prompt.Answer,
        phase: String
    ) {
        let distinct = Set(results.map { $0.map(\.generation) })
        if prompts == 1, distinct.count > 1 {
            oracle.report(
                .stepUpSharedNotSticky,
                "the \(results.count) waiters of one prompt got \(distinct.count) different outcomes (\(phase))",
                trace: distinct.prefix(4).map { Self.describe($0) })
        }
        let expected = Self.owed(answer)
        for result in results {
            switch result {
            case .success(let elevated):
                if let expected, prompts == 1 {
                    oracle.report(
                        .stepUpSharedNotSticky,
                        "a waiter of a \(expected == .stepUpDenied ? "denied" : "dismissed") prompt got an elevated token (\(phase))")
                }
                checkElevated(elevated, phase: phase)
            case .failure(let error) where error == expected && prompts == 0:
                oracle.report(
                    .stepUpSharedNotSticky,
                    "a clinical request failed with '\(error)' with no prompt shown: an earlier answer was kept (\(phase))")
            case .failure(let error) where error == expected:
                break
            case .failure(let error) where expected == nil && prompts == 0 && error.isStepUp:
                oracle.report(
                    .stepUpSharedNotSticky,
                    "a clinical request failed with '\(error)' with no prompt shown: an earlier denial was kept (\(phase))")
            case .failure(let error):
                oracle.report(
                    .served, "a clinical request of a signed-in user failed with '\(error)' (\(phase))",
                    trace: ["the prompt was answered: \(answer.rawValue); prompts shown: \(prompts)"])
            }
        }
    }

    /// An elevated token handed out now must be fresh and belong to the signed-in user's session.
    func checkElevated(_ elevated: ElevatedToken, phase: String) {
        let owner = familyOf(elevated.baseGeneration)
        if elevated.subject != subjects[subject] || owner != family {
            let whose = ended.contains { $0.family == owner } ? "a session that had ended" : "another session"
            oracle.report(
                .elevationEndsWithSession,
                "an elevated token bought in \(whose) was handed out (\(phase))",
                trace: ["elevated \(elevated) bought with access-token generation \(elevated.baseGeneration) of family \(owner); the signed-in session is family \(family)"])
        } else if !elevated.isFresh(at: time.now) {
            oracle.report(.fresh, "an expired elevated token was handed out (\(phase))", trace: ["\(elevated)"])
        }
    }

    /// The waiters of a prompt whose session ended while it was open: `signedOut`, or an elevated
    /// token of the session signed in now (never the ended one's).
    /// The error every waiter of a prompt answered `answer` is owed; `nil` when approved.
    static func owed(_ answer: SimulatedUser.Prompt.Answer) -> SessionError? {
        switch answer {
        case .approved: nil
        case .denied: .stepUpDenied
        case .dismissed: .stepUpDismissed
        }
    }

    /// Requests cancelled while a prompt was open: each returned (their hang is I3), with
    /// `cancelled` or an elevated token of the session; any other answer is one they were not owed.
    func judgeCancelled(_ calls: [Call], answer: SimulatedUser.Prompt.Answer, phase: String) {
        let owed = Self.owed(answer)
        for call in calls {
            guard case .elevated(let result) = call else { continue }
            switch result {
            case .failure(.cancelled): break
            case .failure(let error) where error == owed: break
            case .success(let elevated): checkElevated(elevated, phase: phase)
            case .failure(let error):
                oracle.report(
                    .cancellationIsolated,
                    "a clinical request cancelled while the prompt was open got '\(error)', neither 'cancelled' nor the prompt's outcome (\(phase))",
                    trace: ["the prompt was \(answer.rawValue); only the request's own task was cancelled"])
            }
        }
    }

    func judgeEndedPrompt(_ calls: [Call], ending: String, phase: String) {
        for call in calls {
            guard case .elevated(let result) = call else { continue }
            switch result {
            case .failure(.signedOut): break
            case .success(let elevated): checkElevated(elevated, phase: phase)
            case .failure(let error):
                oracle.report(
                    .elevationEndsWithSession,
                    "a clinical request waiting on the prompt got '\(error)', not 'signed out', when \(ending) (\(phase))")
            }
        }
    }

    /// The kept API objects, with nobody signed in: every call fails with `signedOut`, no prompt.
    mutating func checkClientsSignedOut(when: String, outcome: inout DriverOutcome) async -> Bool {
        let before = user.prompts.count
        let log = self.calls, store = self.store
        for (index, client) in (clients + later).enumerated() {
            guard let calls = await watched(when, outcome: &outcome, { () async -> [Call] in
                var calls: [Call] = []
                calls.append(.base(await log.call(.clientToken(client), on: store, phase: when)))
                do throws(SessionError) { calls.append(.elevated(.success(try await client.elevatedToken()))) } catch {
                    calls.append(.elevated(.failure(error)))
                }
                return calls
            }) else { return false }
            for call in calls {
                switch call {
                case .base(.failure(.signedOut)), .elevated(.failure(.signedOut)): break
                case .base(.success(let token)):
                    oracle.report(
                        .clientFollowsSession, "an API object returned a token \(when), with nobody signed in",
                        trace: ["API object \(index): \(token) of family \(familyOf(token.generation))"])
                case .elevated(.success(let elevated)):
                    oracle.report(
                        .elevationEndsWithSession, "an API object returned an elevated token \(when), with nobody signed in",
                        trace: ["API object \(index): \(elevated)"])
                case .base(.failure(let error)), .elevated(.failure(let error)):
                    oracle.report(
                        .clientFollowsSession,
                        "an API object's call \(when) failed with '\(error)', not 'signed out' as the contract says")
                }
            }
        }
        if user.prompts.count > before {
            oracle.report(.clientFollowsSession, "the user was prompted \(when), with nobody signed in")
        }
        return true
    }

    /// The kept API objects, made before sign-in, serve the user signed in now.
    mutating func checkClientsServe(round: Int, outcome: inout DriverOutcome) async -> Bool {
        let log = self.calls, store = self.store
        for (index, client) in (clients + later).enumerated() {
            guard let result = await watched("round \(round): API objects after sign-in", outcome: &outcome, {
                () async -> Result<AccessToken, SessionError> in
                await log.call(.clientToken(client), on: store, phase: "round \(round): API objects after sign-in")
            }) else { return false }
            switch result {
            case .success(let token) where token.subject == subjects[subject] && familyOf(token.generation) == family:
                outcome.operations += 1
            case .success(let token):
                oracle.report(
                    .clientFollowsSession,
                    "an API object made \(index < clients.count ? "before sign-in" : "in an earlier session") returned \(ended.contains { $0.family == familyOf(token.generation) } || token.subject != subjects[subject] ? "the previous user's" : "another session's") token after a sign-in (round \(round))",
                    trace: ["API object \(index): \(token) of family \(familyOf(token.generation)); the signed-in session is family \(family)"])
            case .failure(let error):
                oracle.report(
                    .clientFollowsSession,
                    "an API object made before sign-in failed with '\(error)' with a user signed in (round \(round))")
            }
        }
        return true
    }

    /// No server call for a session after its sign-out returned: nothing holds it alive.
    func checkEndedSessions() {
        for session in ended {
            let late = server.ledger.entries.filter {
                $0.family == session.family && $0.call != .signIn && $0.sentAt > session.at
            }
            if let first = late.first {
                oracle.report(
                    .clientFollowsSession,
                    "\(late.count) server call(s) for a session after its sign-out returned: something kept it alive",
                    trace: [Oracle.describe(first)])
            }
        }
    }

    func promptTrace(since start: Int) -> [String] {
        user.prompts.dropFirst(start).prefix(3).map {
            "prompt #\($0.index) [\($0.context)]: \($0.answer?.rawValue ?? "unanswered")"
        }
    }

    static func describe(_ outcome: Result<UInt64, SessionError>) -> String {
        switch outcome {
        case .success(let generation): "elevated token generation \(generation)"
        case .failure(let error): "'\(error)'"
        }
    }
}
