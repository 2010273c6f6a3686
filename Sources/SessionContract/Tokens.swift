/// The user a token belongs to. A user id is personal data: it is compared, never printed.
public struct Subject: Hashable, Sendable, RedactedWhenPrinted {
    /// The raw identifier. Reach for it only to talk to a server; never log it.
    public let rawValue: String

    public init(_ rawValue: String) { self.rawValue = rawValue }
}

/// A bearer token as a store hands it out.
///
/// `value` is opaque and, with the simulated server's defaults, JWT-sized (900 bytes), so
/// copying and comparing a token costs what it costs in a real app. Printing a token shows
/// its generation and expiry, never its value or subject.
public struct AccessToken: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The opaque bearer value sent in `Authorization` headers. Secret.
    public let value: String
    /// Whose token this is. Personal data.
    public let subject: Subject
    /// Assigned by the server; strictly increasing across the tokens of one session.
    public let generation: UInt64
    /// The instant, on the store's ``TokenClock``, after which the token is expired.
    public let expiresAt: TokenInstant

    public init(value: String, subject: Subject, generation: UInt64, expiresAt: TokenInstant) {
        self.value = value
        self.subject = subject
        self.generation = generation
        self.expiresAt = expiresAt
    }

    /// Whether the token is still unexpired `margin` after `now`.
    @inlinable
    public func isFresh(at now: TokenInstant, margin: Duration = .zero) -> Bool {
        now + margin < expiresAt
    }

    /// The same token with its value in storage of its own, so holders of the copy share no
    /// reference count with holders of the original.
    public func unsharedCopy() -> AccessToken {
        let bytes = Array(value.utf8)
        return AccessToken(
            value: String(decoding: bytes, as: UTF8.self), subject: subject, generation: generation,
            expiresAt: expiresAt)
    }

    public var description: String {
        """
        AccessToken(generation: \(generation), expiresAt: \(expiresAt.nanoseconds)ns, \
        value: redacted \(value.utf8.count) bytes)
        """
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: ["generation": generation, "expiresAt": expiresAt.nanoseconds])
    }
}

/// A refresh token: secret, single-use on a rotating server.
public struct RefreshToken: Hashable, Sendable, RedactedWhenPrinted {
    public let value: String

    public init(_ value: String) { self.value = value }
}

/// What the server returns from a sign-in or a refresh.
public struct TokenGrant: Hashable, Sendable {
    public let accessToken: AccessToken
    public let refreshToken: RefreshToken

    public init(accessToken: AccessToken, refreshToken: RefreshToken) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
    }
}

/// What a user presents to sign in. Both fields are secrets.
public struct Credentials: Hashable, Sendable, RedactedWhenPrinted {
    public let subject: Subject
    public let secret: String

    public init(subject: Subject, secret: String = "") {
        self.subject = subject
        self.secret = secret
    }
}

/// A value that holds a secret or personal data, and so prints as `TypeName(redacted)`
/// everywhere: `print`, string interpolation, `debugPrint`, and `dump` (no children).
public protocol RedactedWhenPrinted: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {}

extension RedactedWhenPrinted {
    public var description: String { "\(Self.self)(redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
