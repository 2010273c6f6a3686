import SessionContract

/// One call the server received. Holds no token values and no user ids: a family number
/// and generations are enough to check every invariant.
public struct LedgerEntry: Sendable, Hashable {
    public enum Call: String, Sendable, Hashable {
        case signIn
        case refresh
        /// A step-up: an access token and a proof of presence exchanged for an elevated token.
        case elevate
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
        /// The server rotated the token but the response never reached the client (an
        /// injected fault, or the client went away while the answer was on its way).
        case responseLost
        /// The client went away (its task was cancelled: a dropped connection) before the
        /// server acted on the call; nothing changed on the server.
        case dropped
        /// A sign-in whose credentials were refused; no session was started.
        case refused
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
    public internal(set) var outcome: Outcome
    /// The generation of the access token issued, if one was.
    public let issuedGeneration: UInt64?
    /// When the request reached the server (before any gate held it), in real monotonic
    /// nanoseconds, whatever clock the server hands out tokens on.
    public let sentAt: Int64
    /// When the answer (grant or error) was handed back to the client, in real monotonic
    /// nanoseconds; `nil` while the call is still in flight.
    public internal(set) var respondedAt: Int64?
    /// The issued access token had already expired on the server's clock when the answer
    /// was handed back (a lifetime shorter than the trip).
    public internal(set) var deliveredExpired: Bool = false
    /// The answer was lost because the client went away (its task was cancelled) while it
    /// travelled, not by an injected fault.
    public internal(set) var lostByClient: Bool = false
    /// The answer was on its way when the client's process died (``Ledger/loseInCrash(_:at:)``):
    /// a grant or a refusal that never reached it.
    public internal(set) var lostInCrash: Bool = false
    /// What the harness was doing when the call arrived (`round 4, sign-out race`), for traces.
    public let context: String
    /// For a machine client's grant (client credentials): which client, as a number the server
    /// gave it (1, 2, …), so that concurrent grants for one client show without naming it.
    public internal(set) var principal: UInt64?

    /// Whether the server acted on the presented refresh token: a redemption in the sense of
    /// rotation and reuse detection. Calls refused before the server acted are not.
    public var isRedemption: Bool {
        switch outcome {
        case .issued, .reuseAccepted, .reuseDetected, .responseLost, .familyRevoked: true
        case .unknownToken, .transientFailure, .timedOut, .dropped, .refused: false
        }
    }

    /// Whether the call bought the client a grant with the presented refresh token: the server
    /// rotated it and answered (expired on arrival or not), or would have but for the client
    /// hanging up. A refused presentation (reuse detected, a revoked family, an unknown token)
    /// bought nothing, and neither did an answer lost in the network, which the client never had.
    /// Presenting the token again is a redemption after the rotation only once one of these came
    /// before it.
    public var boughtGrant: Bool {
        switch outcome {
        case .issued, .reuseAccepted: true
        case .responseLost: lostByClient
        case .reuseDetected, .familyRevoked, .unknownToken, .transientFailure, .timedOut, .dropped, .refused: false
        }
    }

    /// Whether the client received a usable grant from this call.
    public var deliveredGrant: Bool { (outcome == .issued || outcome == .reuseAccepted) && !deliveredExpired }

    /// Whether the server refused the refresh token itself (OAuth `invalid_grant`): the only
    /// answer that may end a session.
    public var isInvalidGrant: Bool {
        outcome == .reuseDetected || outcome == .familyRevoked || outcome == .unknownToken
    }

    /// Whether the call failed in a way that may pass: the client may refresh again.
    public var isPassingFailure: Bool {
        switch outcome {
        case .transientFailure, .timedOut, .responseLost, .dropped: true
        case .issued, .reuseAccepted: deliveredExpired
        case .reuseDetected, .familyRevoked, .unknownToken, .refused: false
        }
    }
}

/// Everything the server was asked, in order. Counting is exact: a duplicate refresh is
/// recorded even when a grace window lets it through.
public struct Ledger: Sendable {
    public private(set) var entries: [LedgerEntry] = []
    /// Bearer tokens the protected resource refused (each answered 401), in order.
    public private(set) var resourceRejections: [ResourceRejection] = []
    /// Requests the protected resource accepted.
    public internal(set) var resourceAccepted = 0

    public init() {}

    /// Replaces the entries, for counting over a slice of another ledger.
    public mutating func replaceEntries(_ newEntries: [LedgerEntry]) { entries = newEntries }

    @discardableResult
    mutating func append(
        at: TokenInstant, call: LedgerEntry.Call, family: UInt64, presentedGeneration: UInt64?,
        outcome: LedgerEntry.Outcome, issuedGeneration: UInt64?, sentAt: Int64, context: String,
        principal: UInt64? = nil
    ) -> Int {
        entries.append(
            LedgerEntry(
                index: entries.count, at: at, call: call, family: family, presentedGeneration: presentedGeneration,
                outcome: outcome, issuedGeneration: issuedGeneration, sentAt: sentAt, context: context))
        entries[entries.count - 1].principal = principal
        return entries.count - 1
    }

    mutating func rejectResource(_ rejection: ResourceRejection) { resourceRejections.append(rejection) }

    mutating func markResponded(_ index: Int, at: Int64, lost: Bool, expired: Bool) {
        guard entries.indices.contains(index) else { return }
        entries[index].respondedAt = at
        entries[index].deliveredExpired = expired
        if lost {
            entries[index].lostByClient = true
            if entries[index].outcome == .issued || entries[index].outcome == .reuseAccepted {
                entries[index].outcome = .responseLost
            }
        }
    }

    /// The call's answer was on its way when the client's process died (`explore`'s crash): it
    /// is answered now, and lost — not by the client's choice, so a grant it carried was never
    /// the client's (``boughtGrant`` is false) and presenting the refresh token again is no reuse
    /// of the client's making.
    mutating func loseInCrash(_ index: Int, at: Int64) {
        guard entries.indices.contains(index), entries[index].respondedAt == nil else { return }
        entries[index].respondedAt = at
        entries[index].lostInCrash = true
        if entries[index].outcome == .issued || entries[index].outcome == .reuseAccepted {
            entries[index].outcome = .responseLost
        }
    }

    /// Refresh calls received, whatever their outcome.
    public var refreshCalls: Int { entries.count { $0.call == .refresh } }

    /// Elevation calls received, whatever their outcome.
    public var elevateCalls: Int { entries.count { $0.call == .elevate } }

    /// Sign-in calls received.
    public var signInCalls: Int { entries.count { $0.call == .signIn } }

    /// Refresh calls per presented generation, for generations presented more than once
    /// (the single-flight and no-reuse invariants). Calls that failed before the server acted
    /// (transient, timeout, dropped) are not redemptions and are not counted.
    public var repeatedRedemptions: [UInt64: Int] {
        var counts: [UInt64: Int] = [:]
        for entry in entries where entry.call == .refresh && entry.isRedemption {
            guard let generation = entry.presentedGeneration else { continue }
            counts[generation, default: 0] += 1
        }
        return counts.filter { $0.value > 1 }
    }

    /// Times the server saw a used refresh token again (accepted in grace or not).
    public var reuseCount: Int { entries.count { $0.outcome == .reuseAccepted || $0.outcome == .reuseDetected } }

    /// Families the server revoked for reuse.
    public var revokedFamilies: Set<UInt64> { Set(entries.filter { $0.outcome == .reuseDetected }.map(\.family)) }
}
