import SessionContract
import TokenServer

/// The contract's sequential model of a run: which session each account held when, rebuilt from
/// facts only — the sign-ins and sign-outs the harness made (with when each started and returned)
/// and the server's ledger (which family each sign-in started, every refresh of it, and when the
/// server refused one). No store internals.
///
/// ```
///              signIn(user)            refresh ok / transient failure
///  signed out ──────────────▶ session ◀──────────────────────────────┐
///      ▲  ▲   (sign-in fails)   │  │ expiry, within skew, 401 current │
///      │  └─────────────────────┘  ▼                                 │
///      │                       refreshing ─────────────────────────────┘
///      │   signOut, or            │ invalid_grant
///      └── signIn(another) ◀── revoked
/// ```
///
/// A session is one server family: it begins when its sign-in starts and ends when the account's
/// next sign-in or sign-out starts (its fence is when that call returns). A call belongs to the
/// session current when it started; while a sign-in or sign-out is under way, to either side.
package struct SessionTimeline {
    package struct Session {
        package let account: Int
        package let family: UInt64
        /// Which of the account's users signed in.
        package let slot: Int
        /// The sign-in that started it.
        package let began: SessionEvent
        /// The account's next event, which ended it.
        package var ended: SessionEvent?
        /// When the server first answered one of its refreshes `invalid_grant`: the earliest answer
        /// that reached the client.
        package var refusedAt: Int64?
    }

    package private(set) var sessions: [UInt64: Session] = [:]
    package private(set) var events: [Int: [SessionEvent]] = [:]
    /// Refresh calls by family, in the order received.
    package private(set) var refreshes: [UInt64: [LedgerEntry]] = [:]
    /// When each generation's grant was answered (its sign-in or refresh).
    package private(set) var deliveredAt: [UInt64: Int64] = [:]
    /// When each generation's grant reached the client, its access token fresh or already
    /// expired (a store keeps the rotated grant either way).
    package private(set) var heldFrom: [UInt64: Int64] = [:]
    /// Generations by family, in the order issued.
    package private(set) var generations: [UInt64: [UInt64]] = [:]
    /// Generations whose access token had expired by the time its answer arrived.
    package private(set) var expiredOnArrival: Set<UInt64> = []
    package let issued: [UInt64: TokenServer.IssuedToken]
    package let entries: [LedgerEntry]

    package init(events: [SessionEvent], entries: [LedgerEntry], issued: [UInt64: TokenServer.IssuedToken]) {
        self.entries = entries
        self.issued = issued
        for event in events.sorted(by: { $0.startedNanos < $1.startedNanos }) {
            self.events[event.account, default: []].append(event)
        }
        for (account, list) in self.events {
            for (position, event) in list.enumerated() {
                guard case .signIn(let slot, let family?) = event.kind else { continue }
                sessions[family] = Session(
                    account: account, family: family, slot: slot, began: event,
                    ended: position + 1 < list.count ? list[position + 1] : nil)
            }
        }
        // An elevation's generation is an elevated token's, not one of the session's grants.
        for entry in entries where entry.call != .elevate {
            if let generation = entry.issuedGeneration, let answered = entry.respondedAt, entry.deliveredGrant {
                deliveredAt[generation] = answered
            }
            if let generation = entry.issuedGeneration, let answered = entry.respondedAt,
                entry.deliveredGrant || entry.deliveredExpired
            {
                heldFrom[generation] = answered
            }
            if let generation = entry.issuedGeneration { generations[entry.family, default: []].append(generation) }
            if let generation = entry.issuedGeneration, entry.deliveredExpired { expiredOnArrival.insert(generation) }
            guard entry.call == .refresh, entry.family != 0 else { continue }
            refreshes[entry.family, default: []].append(entry)
            // The earliest answer, not the first request's: the server decides in the order it
            // received, but answers after each call's own latency, so a refusal decided later
            // (a refresh of the revoked family) can reach its caller before the one that revoked it.
            // A refusal the client hung up on before it arrived told the store nothing.
            if entry.isInvalidGrant, !entry.lostByClient, !entry.lostInCrash, let answered = entry.respondedAt,
                var session = sessions[entry.family]
            {
                session.refusedAt = min(session.refusedAt ?? answered, answered)
                sessions[entry.family] = session
            }
        }
    }

    /// The session a generation belongs to, if the harness started it.
    package func session(ofGeneration generation: UInt64) -> Session? {
        issued[generation].flatMap { sessions[$0.family] }
    }

    /// The account's events, in the order they started.
    package func events(of account: Int) -> [SessionEvent] { events[account] ?? [] }

    /// The sessions a call of `account` that started at `instant` may belong to, and whether
    /// "no session" is a possible answer then (signed out, a sign-in that failed, or an event under
    /// way that starts or ends one).
    package func current(account: Int, at instant: Int64) -> (families: [UInt64], noneAllowed: Bool) {
        let list = events(of: account)
        var families: [UInt64] = []
        var noneAllowed = true
        if let previous = list.last(where: { $0.returnedNanos < instant }) {
            if let family = previous.family, previous.error == nil {
                families.append(family)
                noneAllowed = false
            }
        }
        for open in list where open.startedNanos <= instant && open.returnedNanos >= instant {
            noneAllowed = true
            if let family = open.family { families.append(family) }
            // The session the open event ends is still possible: the one before it.
            if let before = list.last(where: { $0.startedNanos < open.startedNanos }), let family = before.family,
                !families.contains(family)
            {
                families.append(family)
            }
        }
        return (families, noneAllowed)
    }

    /// Whether a sign-in or sign-out of `account` was under way at any moment of `[start, end]`.
    package func eventOverlaps(account: Int, _ start: Int64, _ end: Int64) -> SessionEvent? {
        events(of: account).first { $0.overlaps(start, end) }
    }

    /// The newest generation of `family` whose grant had been answered by `instant`.
    package func newestDelivered(family: UInt64, by instant: Int64) -> UInt64? {
        generations[family]?.last { (deliveredAt[$0] ?? .max) <= instant }
    }

    /// The newest generation of `family` whose grant the client had been answered by `instant`,
    /// its access token fresh or expired on arrival: the refresh token a store holds then.
    package func newestHeld(family: UInt64, by instant: Int64) -> UInt64? {
        generations[family]?.last { (heldFrom[$0] ?? .max) <= instant }
    }

    /// The refresh calls of `family`.
    package func refreshes(of family: UInt64) -> [LedgerEntry] { refreshes[family] ?? [] }

    /// Whether a refresh of `family` was possibly under way at some moment of `[start, end]`: sent
    /// by then and not yet answered at its start.
    package func refreshOverlaps(family: UInt64, _ start: Int64, _ end: Int64) -> LedgerEntry? {
        refreshes(of: family).first { $0.sentAt <= end && ($0.respondedAt ?? .max) >= start }
    }

    /// A refresh of `family` that was under way for the whole of `[start, end]`.
    package func refreshSpans(family: UInt64, _ start: Int64, _ end: Int64) -> LedgerEntry? {
        refreshes(of: family).first { $0.sentAt < start && ($0.respondedAt ?? .max) > end }
    }
}
