import SessionContract
import SessionSync
import Synchronization

/// An in-process OAuth token server that behaves like a strict real one.
///
/// - Every sign-in starts a token *family*. A refresh redeems the family's current refresh
///   token and rotates it: the response carries a new access token (with a higher
///   generation) and a new refresh token.
/// - A refresh token presented a second time is *reuse*. Within ``Configuration/reuseGraceWindow``
///   of its first redemption it is tolerated (as some providers allow); otherwise the whole
///   family is revoked and every later refresh in it fails with `invalid_grant` — the
///   session is logged out, as RFC 6749 §10.4 and RFC 9700 §4.14.2 advise.
/// - Latency follows a ``LatencyModel``; faults follow a ``FaultModel`` or are scripted with
///   ``injectRefreshFaults(_:count:)``; the ``gate`` can hold refreshes in flight.
/// - A client that goes away is seen as a dropped connection: a refresh whose task is
///   cancelled before the server acts on it changes nothing (`dropped`); one cancelled while
///   the answer is on its way has rotated the token, but the client never gets it
///   (`responseLost`). Either way the client sees ``TokenEndpointError/transient``.
/// - Every call lands in the ``ledger``, from which the harness checks the invariants, with
///   real-time stamps of when it was sent and answered and the harness's ``context``.
///
/// Generations come from one counter for the whole server, so they are strictly increasing
/// within a family and never repeat across families.
public final class TokenServer: StepUpEndpoint {
    /// Where token values come from.
    public enum TokenBytes: Sendable {
        /// The seed's generator: the same seed issues the same tokens (the harness replays runs).
        case seeded
        /// The system's CSPRNG: a server other processes can reach must issue tokens no one can
        /// guess from its options.
        case system
    }

    public struct Configuration: Sendable {
        /// How long an access token lives.
        public var tokenLifetime: Duration
        /// Bytes in an access token's value (a typical JWT: about 900).
        public var tokenSize: Int
        /// How long a redeemed refresh token may be presented again without revoking the family.
        public var reuseGraceWindow: Duration
        public var latency: LatencyModel
        public var faults: FaultModel
        /// Seeds latency and fault draws, and token bytes when ``tokenBytes`` is `.seeded`.
        public var seed: UInt64
        /// Where token bytes come from.
        public var tokenBytes: TokenBytes
        /// How long an elevated token lives (shorter than an access token, as step-up grants are).
        public var stepUpLifetime: Duration

        public init(
            tokenLifetime: Duration = .seconds(3600), tokenSize: Int = 900, reuseGraceWindow: Duration = .zero,
            latency: LatencyModel = .none, faults: FaultModel = .none, seed: UInt64 = 1,
            stepUpLifetime: Duration = .seconds(300), tokenBytes: TokenBytes = .seeded
        ) {
            self.tokenBytes = tokenBytes
            self.stepUpLifetime = stepUpLifetime
            self.tokenLifetime = tokenLifetime
            self.tokenSize = max(tokenSize, 16)
            self.reuseGraceWindow = reuseGraceWindow
            self.latency = latency
            self.faults = faults
            self.seed = seed
        }
    }

    struct IssuedRefreshToken {
        var family: UInt64
        var generation: UInt64
        var redeemedAt: TokenInstant?
    }

    struct Family {
        var subject: Subject
        var isRevoked = false
    }

    /// What the server handed out as one access token, kept so the harness can tell a token a
    /// store returns from one it made up or tore: its session, its user, its expiry and a
    /// fingerprint of its value (never the value).
    public struct IssuedToken: Sendable, Hashable {
        public let family: UInt64
        public let subject: Subject
        public let expiresAt: TokenInstant
        public let fingerprint: UInt64
    }

    struct State {
        var random: SeededRandom
        var generation: UInt64 = 0
        var families: [UInt64: Family] = [:]
        var refreshTokens: [String: IssuedRefreshToken] = [:]
        var ledger = Ledger()
        var scriptedFaults: [FaultModel.Fault?] = []
        /// Refreshes whose answers were on their way when the client's process died.
        var lostInCrash: Set<Int> = []
        var context = ""
        /// Access-token generation → family, for elevation requests.
        var familyOfGeneration: [UInt64: UInt64] = [:]
        /// Proofs of presence not yet redeemed, by value → subject.
        var proofs: [String: Subject] = [:]
        /// Access tokens issued, by value: what the protected resource and an elevation over
        /// HTTP look a presented bearer token up in. Kept only while ``keepsAccessTokens``.
        var accessTokens: [String: AccessToken] = [:]
        var keepsAccessTokens = false
        /// Each machine client that was granted tokens, numbered in order of its first grant.
        var principals: [Subject: UInt64] = [:]
        /// Every access token issued, by generation.
        var issued: [UInt64: IssuedToken] = [:]
        /// Scripted answers to the next sign-ins: a fault, or `nil` for a healthy one.
        var scriptedSignIns: [SignInFault?] = []
        /// The lifetime of the tokens issued from now on, when it is not the configuration's.
        var lifetime: Duration?
    }

    /// How a scripted sign-in fails.
    public enum SignInFault: Sendable, Hashable {
        /// The credentials are refused (`invalidCredentials`).
        case refused
        /// A server error (`transient`): nothing was granted.
        case transient
    }

    public let configuration: Configuration
    /// Holds refresh calls in flight on demand.
    public let gate = RefreshGate()
    /// Holds sign-ins (not machine clients' grants) in flight on demand: a sign-in answered after
    /// a sign-out, or after a later sign-in.
    public let signInGate = RefreshGate()
    let clock: TokenClock
    let state: Mutex<State>
    /// How the server waits out a call's latency; `nil`: `Task.sleep`.
    let sleeper: (@Sendable (Duration) async -> Void)?

    /// - Parameter sleeper: waits out each call's latency instead of `Task.sleep` (a scheduler
    ///   with time of its own hands the exact delay to it).
    public init(
        configuration: Configuration = Configuration(), clock: TokenClock = .coarse,
        sleeper: (@Sendable (Duration) async -> Void)? = nil
    ) {
        self.configuration = configuration
        self.clock = clock
        self.sleeper = sleeper
        state = Mutex(State(random: SeededRandom(seed: configuration.seed)))
    }

    /// A copy of everything received so far.
    public var ledger: Ledger { state.withLock(visibleTo: self) { $0.ledger } }

    /// Makes the next `count` refresh calls fail with `fault`, ahead of any random fault.
    public func injectRefreshFaults(_ fault: FaultModel.Fault, count: Int = 1) {
        state.withLock(visibleTo: self) {
            $0.scriptedFaults.append(contentsOf: repeatElement(Optional(fault), count: count))
        }
    }

    /// Scripts the next refresh calls: each element is the fault for one call, `nil` for a
    /// healthy answer. Replaces any script not yet used; random faults resume after it.
    public func scriptRefreshes(_ faults: [FaultModel.Fault?]) {
        state.withLock(visibleTo: self) { $0.scriptedFaults = faults }
    }

    /// Scripts the next sign-ins: each element is the fault for one call, `nil` for a healthy
    /// answer. Replaces any script not yet used; machine clients' grants are never scripted.
    public func scriptSignIns(_ faults: [SignInFault?]) {
        state.withLock(visibleTo: self) { $0.scriptedSignIns = faults }
    }

    /// From now on, access tokens live `lifetime` (`nil`: the configuration's), as a real server
    /// may change `expires_in` from one grant to the next.
    public func setTokenLifetime(_ lifetime: Duration?) {
        state.withLock(visibleTo: self) { $0.lifetime = lifetime }
    }

    /// Every access token issued so far, by generation: what the harness checks a returned token
    /// against (its session, user and expiry as issued, and the fingerprint of its value).
    public var issuedTokens: [UInt64: IssuedToken] { state.withLock(visibleTo: self) { $0.issued } }

    /// The generation of the access token `refreshToken` was issued with, in one grant; `nil` for
    /// a refresh token this server never issued. What the harness checks a saved grant against.
    public func issuedGeneration(of refreshToken: RefreshToken) -> UInt64? {
        state.withLock(visibleTo: self) { $0.refreshTokens[refreshToken.value]?.generation }
    }

    /// Scripted refresh answers not yet used.
    public var scriptedRefreshesLeft: Int { state.withLock(visibleTo: self) { $0.scriptedFaults.count } }

    /// What the harness is doing now; every call recorded from now on carries it.
    public func setContext(_ context: String) {
        state.withLock(visibleTo: self) { $0.context = context }
    }

    /// Real monotonic time in nanoseconds, the clock of the ledger's `sentAt`/`respondedAt`.
    public static func realNanoseconds() -> Int64 { TokenClock.system.now().nanoseconds }

    /// Revokes every session of `subject`, as an administrator or a password change would:
    /// their refresh tokens fail with `invalid_grant` from now on.
    public func revokeSessions(of subject: Subject) {
        state.withLock(visibleTo: self) { state in
            for (id, family) in state.families where family.subject == subject {
                state.families[id]?.isRevoked = true
            }
        }
    }

    public func signIn(_ credentials: Credentials) async throws(TokenEndpointError) -> TokenGrant {
        let sentAt = Self.realNanoseconds()
        _ = await signInGate.pass()
        let refusal = state.withLock(visibleTo: self) { state -> (LedgerEntry.Outcome, Int, Duration)? in
            guard !state.scriptedSignIns.isEmpty, let fault = state.scriptedSignIns.removeFirst() else { return nil }
            let outcome: LedgerEntry.Outcome = fault == .refused ? .refused : .transientFailure
            let index = state.ledger.append(
                at: clock.now(), call: .signIn, family: 0, presentedGeneration: nil, outcome: outcome,
                issuedGeneration: nil, sentAt: sentAt, context: state.context)
            return (outcome, index, configuration.latency.sample(using: &state.random))
        }
        guard let (outcome, index, delay) = refusal else { return await grant(credentials, client: false) }
        await sleep(delay)
        state.withLock(visibleTo: self) {
            $0.ledger.markResponded(index, at: Self.realNanoseconds(), lost: false, expired: false)
        }
        throw outcome == .refused ? .invalidCredentials : .transient
    }

    /// A grant for a machine client (OAuth client credentials): a session of its own, as a
    /// sign-in starts, recorded with the client's number (``LedgerEntry/principal``).
    public func signInClient(_ client: Subject) async -> TokenGrant {
        await grant(Credentials(subject: client), client: true)
    }

    private func grant(_ credentials: Credentials, client: Bool) async -> TokenGrant {
        let sentAt = Self.realNanoseconds()
        let (grant, delay, index) = state.withLock(visibleTo: self) { state in
            let family = UInt64(state.families.count + 1)
            state.families[family] = Family(subject: credentials.subject)
            let grant = issue(&state, family: family)
            var principal: UInt64?
            if client {
                let number = state.principals[credentials.subject] ?? UInt64(state.principals.count + 1)
                state.principals[credentials.subject] = number
                principal = number
            }
            let index = state.ledger.append(
                at: clock.now(), call: .signIn, family: family, presentedGeneration: nil, outcome: .issued,
                issuedGeneration: grant.accessToken.generation, sentAt: sentAt, context: state.context,
                principal: principal)
            return (grant, configuration.latency.sample(using: &state.random), index)
        }
        await sleep(delay)
        state.withLock(visibleTo: self) {
            $0.ledger.markResponded(index, at: Self.realNanoseconds(), lost: false, expired: false)
        }
        return grant
    }

    /// The client's process died (`explore`'s crash): every refresh answer on its way is lost,
    /// answered now in the ledger (``Ledger/loseInCrash(_:at:)``); the call still waiting for it
    /// gets a transient error, which nobody is left to hear.
    public func loseAnswersInFlight() {
        state.withLock(visibleTo: self) { state in
            let now = Self.realNanoseconds()
            for entry in state.ledger.entries where entry.call == .refresh && entry.respondedAt == nil {
                state.ledger.loseInCrash(entry.index, at: now)
                state.lostInCrash.insert(entry.index)
            }
        }
    }

    public func refresh(_ refreshToken: RefreshToken) async throws(TokenEndpointError) -> TokenGrant {
        let sentAt = Self.realNanoseconds()
        guard await gate.pass(), !Task.isCancelled else {
            // The client hung up before the server read the request: nothing happens.
            state.withLock(visibleTo: self) { state in
                let record = state.refreshTokens[refreshToken.value]
                let index = state.ledger.append(
                    at: clock.now(), call: .refresh, family: record?.family ?? 0,
                    presentedGeneration: record?.generation,
                    outcome: .dropped, issuedGeneration: nil, sentAt: sentAt, context: state.context)
                state.ledger.markResponded(index, at: Self.realNanoseconds(), lost: false, expired: false)
            }
            throw .transient
        }
        let (response, delay, index) = state.withLock(visibleTo: self) { state in
            let response = redeem(&state, refreshToken, sentAt: sentAt)
            return (response, configuration.latency.sample(using: &state.random), state.ledger.entries.count - 1)
        }
        let trip: Duration = if case .failure(.timeout) = response { configuration.faults.timeoutAfter } else { delay }
        await sleep(trip)
        // A client that went away while the answer travelled never receives it.
        let hungUp = trip > .zero && Task.isCancelled
        let expired = (try? response.get()).map { !$0.accessToken.isFresh(at: clock.now()) } ?? false
        let crashed = state.withLock(visibleTo: self) {
            if $0.lostInCrash.remove(index) != nil { return true }
            $0.ledger.markResponded(index, at: Self.realNanoseconds(), lost: hungUp, expired: expired && !hungUp)
            return false
        }
        if hungUp || crashed { throw .transient }
        return try response.get()
    }

    /// Decides one refresh under the lock and records it.
    private func redeem(
        _ state: inout State, _ presented: RefreshToken, sentAt: Int64
    ) -> Result<TokenGrant, TokenEndpointError> {
        let now = clock.now()
        let fault =
            state.scriptedFaults.isEmpty
            ? configuration.faults.draw(using: &state.random) : state.scriptedFaults.removeFirst()
        let context = state.context
        guard var record = state.refreshTokens[presented.value] else {
            state.ledger.append(
                at: now, call: .refresh, family: 0, presentedGeneration: nil, outcome: .unknownToken,
                issuedGeneration: nil, sentAt: sentAt, context: context)
            return .failure(.invalidGrant)
        }
        func log(_ outcome: LedgerEntry.Outcome, issued: UInt64? = nil) {
            state.ledger.append(
                at: now, call: .refresh, family: record.family, presentedGeneration: record.generation,
                outcome: outcome, issuedGeneration: issued, sentAt: sentAt, context: context)
        }
        switch fault {
        case .transientFailure?:
            log(.transientFailure)
            return .failure(.transient)
        case .timeout?:
            log(.timedOut)
            return .failure(.timeout)
        case .lostResponse?, .expiredOnArrival?, nil:
            break
        }
        if state.families[record.family]?.isRevoked == true {
            log(.familyRevoked)
            return .failure(.invalidGrant)
        }
        var outcome = LedgerEntry.Outcome.issued
        if let redeemedAt = record.redeemedAt {
            // Tolerated only strictly inside the window: with the default window of zero,
            // every reuse revokes.
            if !(now.duration(since: redeemedAt) < configuration.reuseGraceWindow) {
                state.families[record.family]?.isRevoked = true
                log(.reuseDetected)
                return .failure(.invalidGrant)
            }
            outcome = .reuseAccepted
        } else {
            record.redeemedAt = now
            state.refreshTokens[presented.value] = record
        }
        let grant = issue(&state, family: record.family, expired: fault == .expiredOnArrival)
        if fault == .lostResponse {
            log(.responseLost, issued: grant.accessToken.generation)
            return .failure(.timeout)
        }
        log(outcome, issued: grant.accessToken.generation)
        return .success(grant)
    }

    private func issue(_ state: inout State, family: UInt64, expired: Bool = false) -> TokenGrant {
        state.generation += 1
        let generation = state.generation
        let subject = state.families[family]!.subject
        state.familyOfGeneration[generation] = family
        var system = SystemRandomNumberGenerator()
        func opaque(_ prefix: String, _ size: Int) -> String {
            switch configuration.tokenBytes {
            case .seeded: Self.opaqueValue(prefix: prefix, size: size, using: &state.random)
            case .system: Self.opaqueValue(prefix: prefix, size: size, using: &system)
            }
        }
        let access = AccessToken(
            value: opaque("eyJ", configuration.tokenSize),
            subject: subject, generation: generation,
            expiresAt: clock.now() + (expired ? .zero : state.lifetime ?? configuration.tokenLifetime))
        state.issued[generation] = IssuedToken(
            family: family, subject: subject, expiresAt: access.expiresAt, fingerprint: access.fingerprint)
        if state.keepsAccessTokens { state.accessTokens[access.value] = access }
        let refreshValue = opaque("rt.", 48)
        state.refreshTokens[refreshValue] = IssuedRefreshToken(family: family, generation: generation)
        return TokenGrant(accessToken: access, refreshToken: RefreshToken(refreshValue))
    }

    /// `size` bytes of base64url text after `prefix`: unguessable, unique, JWT-shaped.
    static func opaqueValue(prefix: String, size: Int, using random: inout some RandomNumberGenerator) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        let head = Array(prefix.utf8)
        return String(unsafeUninitializedCapacity: size) { buffer in
            for index in 0..<size {
                buffer[index] = index < head.count ? head[index] : alphabet[Int(random.next() & 63)]
            }
            return size
        }
    }

    func sleep(_ duration: Duration) async {
        guard duration > .zero else { return }
        if let sleeper { return await sleeper(duration) }
        try? await Task.sleep(for: duration)
    }
}

extension AccessToken {
    /// A 64-bit FNV-1a digest of the token's value: equal for equal values in any process, so
    /// a token can be compared with what the server issued without keeping or sending the value.
    /// Not a secret-safe hash: keep it in memory, never print it.
    public var fingerprint: UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in value.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }
}
