import SessionContract
import SessionSync

/// Step-up: the server's second credential domain. A user's proof of presence (``SimulatedUser``
/// hands one out per approved prompt) and a fresh access token buy an elevated token that lives
/// ``TokenServer/Configuration/stepUpLifetime``; every elevation lands in the ledger.
extension TokenServer {
    /// A proof that `subject` is present, as a user's answer to a step-up prompt makes one.
    /// ``elevate(_:proof:)`` accepts it once.
    public func issueProof(for subject: Subject) -> StepUpProof {
        state.withLock(visibleTo: self) { state in
            let value = Self.opaqueValue(prefix: "pp.", size: 32, using: &state.random)
            state.proofs[value] = subject
            return StepUpProof(subject: subject, value: value)
        }
    }

    /// Sells an elevated token for a fresh access token of a live session and an unused proof
    /// of its user's presence. Refused (`invalid_grant`) for an unknown, expired or revoked
    /// access token, or a proof that is unknown, used or another user's.
    public func elevate(_ accessToken: AccessToken, proof: StepUpProof) async throws(TokenEndpointError)
        -> ElevatedToken
    {
        let sentAt = Self.realNanoseconds()
        let (result, delay, index) = state.withLock(visibleTo: self) {
            state -> (Result<ElevatedToken, TokenEndpointError>, Duration, Int) in
            let now = clock.now()
            let family = state.familyOfGeneration[accessToken.generation] ?? 0
            let proofSubject = state.proofs.removeValue(forKey: proof.value)
            var outcome = LedgerEntry.Outcome.issued
            if family == 0 || proofSubject == nil || proofSubject != accessToken.subject {
                outcome = .unknownToken
            } else if state.families[family]?.isRevoked == true || !accessToken.isFresh(at: now) {
                outcome = .familyRevoked
            }
            var result = Result<ElevatedToken, TokenEndpointError>.failure(.invalidGrant)
            var issued: UInt64?
            if outcome == .issued {
                state.generation += 1
                issued = state.generation
                result = .success(
                    ElevatedToken(
                        value: Self.opaqueValue(prefix: "el.", size: 64, using: &state.random),
                        subject: accessToken.subject, generation: state.generation,
                        baseGeneration: accessToken.generation, expiresAt: now + configuration.stepUpLifetime))
            }
            let index = state.ledger.append(
                at: now, call: .elevate, family: family, presentedGeneration: accessToken.generation, outcome: outcome,
                issuedGeneration: issued, sentAt: sentAt, context: state.context)
            return (result, configuration.latency.sample(using: &state.random), index)
        }
        await sleep(delay)
        state.withLock(visibleTo: self) {
            $0.ledger.markResponded(index, at: Self.realNanoseconds(), lost: false, expired: false)
        }
        return try result.get()
    }
}
