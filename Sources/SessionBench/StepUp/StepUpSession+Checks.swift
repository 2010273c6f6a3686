import SessionContract
import SessionOracle
import SessionSync
import TokenServer

/// What `step-up` records for its judge (``StepUpJudge``): what each burst, prompt waiter and
/// kept API object got, with the session signed in at the time.
extension StepUpSession {
    /// The session now, as the judge needs it beside an observation.
    var now: StepUpHistory.Session {
        .init(subject: subjects[subject], family: family, now: time.now, ended: history.ended.count)
    }

    mutating func observe(_ observation: StepUpHistory.Observation) { history.observations.append(observation) }

    /// Records that the session of `family` ended now, in `round`.
    mutating func ended(round: Int) {
        history.ended.append(.init(family: family, at: TokenServer.realNanoseconds(), round: round))
    }

    /// The elevated-token calls among `calls`.
    static func elevated(_ calls: [Call]) -> [Result<ElevatedToken, SessionError>] {
        calls.compactMap { if case .elevated(let result) = $0 { result } else { nil } }
    }

    /// The kept API objects, with nobody signed in: their base and elevated tokens, and whether
    /// the user was prompted meanwhile.
    mutating func checkClientsSignedOut(when: String, outcome: inout DriverOutcome) async -> Bool {
        let before = user.prompts.count
        let log = self.calls
        let store = self.store
        var seen: [(client: Int, call: Call)] = []
        // Whether the user was prompted is asked once every call is back: after a hang, a call
        // still running may prompt at any moment, and the hang is the verdict.
        var finished = false
        defer {
            observe(.clientsSignedOut(when: when, calls: seen, prompted: finished && user.prompts.count > before))
        }
        for (index, client) in (clients + later).enumerated() {
            guard
                let calls = await watched(
                    when, outcome: &outcome,
                    { () async -> [Call] in
                        var calls: [Call] = []
                        calls.append(.base(await log.call(.clientToken(client), on: store, phase: when)))
                        do throws(SessionError) {
                            calls.append(.elevated(.success(try await client.elevatedToken())))
                        } catch {
                            calls.append(.elevated(.failure(error)))
                        }
                        return calls
                    })
            else { return false }
            seen += calls.map { (index, $0) }
        }
        finished = true
        return true
    }

    /// The kept API objects, made before sign-in, asked for a token after it.
    mutating func checkClientsServe(round: Int, outcome: inout DriverOutcome) async -> Bool {
        let log = self.calls
        let store = self.store
        var results: [Result<AccessToken, SessionError>] = []
        let session = now
        defer { observe(.clientsServe(round: round, kept: clients.count, results: results, session: session)) }
        for client in clients + later {
            guard
                let result = await watched(
                    "round \(round): API objects after sign-in", outcome: &outcome,
                    {
                        () async -> Result<AccessToken, SessionError> in
                        await log.call(
                            .clientToken(client), on: store, phase: "round \(round): API objects after sign-in")
                    })
            else { return false }
            results.append(result)
            if case .success(let token) = result,
                StepUpHistory.serves(token, session, ledger: server.ledger.entries)
            {
                outcome.operations += 1
            }
        }
        return true
    }
}
