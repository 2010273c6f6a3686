import SessionContract

/// One call the server received. Holds no token values and no user ids: a family number
/// and generations are enough to check every invariant.
public struct LedgerEntry: Sendable, Hashable {
    public enum Call: String, Sendable, Hashable {
        case signIn
        case refresh
    }

    public enum Outcome: String, Sendable, Hashable {
        /// A new grant was issued and delivered.
        case issued
        /// A used refresh token came back within the grace window; a grant was issued anyway.
        case reuseAccepted
        /// A used refresh token came back outside the grace window: the family is revoked.
        case reuseDetected
        /// The refresh token belongs to a family revoked earlier.
        case familyRevoked
        /// The server does not know the refresh token.
        case unknownToken
        /// Injected transient failure; nothing changed on the server.
        case transientFailure
        /// Injected timeout; nothing changed on the server.
        case timedOut
        /// The server rotated the token but the response never reached the client.
        case responseLost
    }

    /// Position in the ledger, from 0.
    public let index: Int
    /// When the server acted on the call, on its clock.
    public let at: TokenInstant
    public let call: Call
    /// The token family (one per sign-in); 0 when the presented token was unknown.
    public let family: UInt64
    /// For a refresh: the generation of the grant the presented refresh token came with.
    public let presentedGeneration: UInt64?
    public let outcome: Outcome
    /// The generation of the access token issued, if one was.
    public let issuedGeneration: UInt64?
}

/// Everything the server was asked, in order. Counting is exact: a duplicate refresh is
/// recorded even when a grace window lets it through.
public struct Ledger: Sendable {
    public private(set) var entries: [LedgerEntry] = []

    public init() {}

    /// Replaces the entries, for counting over a slice of another ledger.
    public mutating func replaceEntries(_ newEntries: [LedgerEntry]) { entries = newEntries }

    mutating func append(
        at: TokenInstant, call: LedgerEntry.Call, family: UInt64, presentedGeneration: UInt64?,
        outcome: LedgerEntry.Outcome, issuedGeneration: UInt64?
    ) {
        entries.append(
            LedgerEntry(
                index: entries.count, at: at, call: call, family: family, presentedGeneration: presentedGeneration,
                outcome: outcome, issuedGeneration: issuedGeneration))
    }

    /// Refresh calls received, whatever their outcome.
    public var refreshCalls: Int { entries.count { $0.call == .refresh } }

    /// Sign-in calls received.
    public var signInCalls: Int { entries.count { $0.call == .signIn } }

    /// Refresh calls per presented generation, for generations presented more than once
    /// (the single-flight and no-reuse invariants). Calls that failed before the server acted
    /// (transient, timeout) are not redemptions and are not counted.
    public var repeatedRedemptions: [UInt64: Int] {
        var counts: [UInt64: Int] = [:]
        for entry in entries where entry.call == .refresh {
            guard let generation = entry.presentedGeneration else { continue }
            switch entry.outcome {
            case .issued, .reuseAccepted, .reuseDetected, .responseLost, .familyRevoked:
                counts[generation, default: 0] += 1
            case .unknownToken, .transientFailure, .timedOut:
                continue
            }
        }
        return counts.filter { $0.value > 1 }
    }

    /// Times the server saw a used refresh token again (accepted in grace or not).
    public var reuseCount: Int { entries.count { $0.outcome == .reuseAccepted || $0.outcome == .reuseDetected } }

    /// Families the server revoked for reuse.
    public var revokedFamilies: Set<UInt64> { Set(entries.filter { $0.outcome == .reuseDetected }.map(\.family)) }
}
