/// An elevated token: the second credential a session holds for sensitive content (seed 000's
/// clinical records), bought with a user's fresh proof of presence and living shorter than the
/// access token. Printing one shows its generation and expiry, never its value or subject.
public struct ElevatedToken: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The opaque value sent with a sensitive request. Secret.
    public let value: String
    /// Whose session it elevates. Personal data.
    public let subject: Subject
    /// Assigned by the server from the same counter as access tokens: unique, increasing.
    public let generation: UInt64
    /// The generation of the access token it was bought with.
    public let baseGeneration: UInt64
    /// The instant, on the store's ``TokenClock``, after which it is expired.
    public let expiresAt: TokenInstant

    public init(value: String, subject: Subject, generation: UInt64, baseGeneration: UInt64, expiresAt: TokenInstant) {
        self.value = value
        self.subject = subject
        self.generation = generation
        self.baseGeneration = baseGeneration
        self.expiresAt = expiresAt
    }

    /// Whether the token is still unexpired `margin` after `now`.
    @inlinable
    public func isFresh(at now: TokenInstant, margin: Duration = .zero) -> Bool { now + margin < expiresAt }

    public var description: String {
        "ElevatedToken(generation: \(generation), expiresAt: \(expiresAt.nanoseconds)ns, value: redacted)"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: ["generation": generation, "expiresAt": expiresAt.nanoseconds])
    }
}

/// What a user's answer to a step-up prompt proves: that the signed-in user is present. The
/// server accepts each proof once, for its subject only. Secret.
public struct StepUpProof: Hashable, Sendable, RedactedWhenPrinted {
    public let subject: Subject
    public let value: String

    public init(subject: Subject, value: String) {
        self.subject = subject
        self.value = value
    }
}

/// How a step-up prompt ended.
public enum StepUpConsent: Sendable, Hashable {
    /// The user confirmed (password, fingerprint).
    case approved(StepUpProof)
    /// The user failed or refused the check.
    case denied
    /// The user dismissed the prompt without answering.
    case dismissed
}

/// The user, as a store asks them to step up: a password sheet or a fingerprint prompt. A
/// prompt takes the user's time and attention, so concurrent requests that need one share it.
public protocol StepUpAuthenticator: Sendable {
    /// Asks the user signed in as `subject` to prove they are present.
    func prompt(for subject: Subject) async -> StepUpConsent
}

/// A token endpoint that also sells elevated tokens.
public protocol StepUpEndpoint: TokenEndpoint {
    /// Exchanges a fresh access token and a proof of presence of its user for an elevated token.
    func elevate(_ accessToken: AccessToken, proof: StepUpProof) async throws(TokenEndpointError) -> ElevatedToken
}

/// An API object: made once (before sign-in, as the seeds' `CurrentAccessibleProxy` makes
/// them) and kept across sign-in, refresh, sign-out and user switch. Each call serves whoever is
/// signed in *when it is made*.
public protocol SessionClient: AnyObject, Sendable {
    /// The token for an ordinary call, as ``SessionStore/validToken()`` answers it.
    func token() async throws(SessionError) -> AccessToken

    /// The elevated token for a sensitive call. Without a fresh one, prompts the user —
    /// **once for every concurrent caller, of every client of the store** — and buys one.
    /// Every waiter of one prompt gets the same outcome; a denial fails that prompt's waiters
    /// only, and the next call prompts again. An elevated token never outlives the session it
    /// was bought in (sign-out, or another user's sign-in).
    func elevatedToken() async throws(SessionError) -> ElevatedToken
}

/// A store that offers step-up authentication through API objects of its own.
public protocol StepUpSessionStore: SessionStore {
    /// A new API object for this store's sessions, present and future.
    func makeClient() -> any SessionClient
}
