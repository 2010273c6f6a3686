import Foundation
import SessionContract
import TokenServer

/// What a token server's ledger alone says about the clients that used it: the verdicts
/// `serve` prints for a client it cannot see inside (any library, any language). Every figure
/// is a count of calls the server received; none holds a token or a user id.
///
/// - **Single flight:** one session's refresh calls never overlap, no refresh token is
///   redeemed twice (but after an answer the server itself lost, which the client never had),
///   and no token is refreshed within the stale window of arriving with nothing said against
///   it (a client that refreshes once per caller, one after another, under a lock).
/// - **No reuse:** the server never saw a used refresh token again.
/// - **No stale-401 refresh:** a 401 for a token older than the session's newest does not make
///   the client refresh the newest one: that token was fine, and the refresh was wasted.
/// - **Stops after `invalid_grant`:** once a session's refresh was refused as `invalid_grant`,
///   its client does not refresh it again (the user must sign in). Counted are the refreshes
///   that arrive after such an answer with none of the session's earlier refreshes still
///   open: a client retrying a dead session, not the tail of a burst sent before any answer.
/// - **No 401 loop:** a token the resource refused is not sent again long after: a client that
///   keeps an old `Authorization` header, or retries an expired token for ever.
/// - **One client grant at a time:** client-credentials grants for one client never overlap;
///   a client that answers a storm of 401s with a storm of new grants starts a session per
///   caller. (Password sign-ins are left out: one user on two devices is not a bug.)
public struct LedgerVerdicts: Sendable, Codable, Equatable {
    public struct Check: Sendable, Codable, Equatable {
        public var name: String
        public var passed: Bool
        /// How many calls broke it (0 when it passed).
        public var count: Int
        /// One line: what was seen, with figures.
        public var detail: String
    }

    public var signIns: Int
    /// Machine clients granted tokens (client credentials).
    public var clients: Int
    /// Client grants that started while another for the same client was in flight.
    public var overlappingClientGrants: Int
    public var refreshCalls: Int
    /// Refresh calls the server acted on (rotation and reuse detection saw them).
    public var redemptions: Int
    /// Distinct refresh tokens redeemed: the expiries (or 401s) the clients refreshed for.
    public var expiriesRefreshed: Int
    /// Redemptions per distinct refresh token; 1.00 for a single-flight client. `nil` before
    /// any refresh.
    public var refreshesPerExpiry: Double?
    /// Refresh calls of one session that started while another was in flight.
    public var overlappingRefreshes: Int
    /// Refreshes of a token within the stale window of its arrival, with no 401 for it.
    public var backToBackRefreshes: Int
    /// Redemptions of a refresh token already redeemed, lost answers excused.
    public var repeatedRedemptions: Int
    public var reuseDetected: Int
    public var reuseAccepted: Int
    public var revokedSessions: Int
    public var staleRejectionRefreshes: Int
    public var refreshesAfterInvalidGrant: Int
    /// 401s for a token that had already been refused more than the loop window before.
    public var repeatedRejections: Int
    public var resourceAccepted: Int
    public var resourceRejected: Int
    public var resourceRejectedExpired: Int
    public var resourceRejectedRevoked: Int
    public var resourceRejectedUnknown: Int
    public var checks: [Check]

    /// Whether every check passed.
    public var passed: Bool { checks.allSatisfy(\.passed) }

    /// How soon after a 401 for an older token a refresh counts as caused by it, and how soon
    /// after a token arrived its refresh counts as back to back: 1 s, or a tenth of the token's
    /// lifetime if that is shorter (a proactive client refreshes near the end of it).
    public let staleWindow: Duration
    /// How long after its first 401 a token may still be refused (requests already in flight)
    /// before the client counts as sending it in a loop.
    public static let loopWindow: Duration = .seconds(2)

    public init(ledger: Ledger, tokenLifetime: Duration) {
        let staleWindow = min(Duration.seconds(1), tokenLifetime / 10)
        self.staleWindow = staleWindow
        let entries = ledger.entries
        let refreshes = entries.filter { $0.call == .refresh }
        signIns = ledger.signInCalls
        refreshCalls = refreshes.count
        var grantsOf: [UInt64: [LedgerEntry]] = [:]
        for entry in entries where entry.call == .signIn {
            if let principal = entry.principal { grantsOf[principal, default: []].append(entry) }
        }
        clients = grantsOf.count
        overlappingClientGrants = grantsOf.values.map(Self.overlapping).reduce(0, +)
        let redeemed = refreshes.filter { $0.isRedemption && $0.presentedGeneration != nil }
        redemptions = redeemed.count
        var byGeneration: [UInt64: [LedgerEntry]] = [:]
        for entry in redeemed { byGeneration[entry.presentedGeneration!, default: []].append(entry) }
        expiriesRefreshed = byGeneration.count
        refreshesPerExpiry = expiriesRefreshed == 0 ? nil : Double(redemptions) / Double(expiriesRefreshed)

        // Overlapping refresh calls of one session.
        var byFamily: [UInt64: [LedgerEntry]] = [:]
        for entry in refreshes where entry.family != 0 { byFamily[entry.family, default: []].append(entry) }
        let overlapping = byFamily.values.map(Self.overlapping).reduce(0, +)
        overlappingRefreshes = overlapping

        // Redeemed again after it bought the client a grant (not after a refusal, or an answer
        // the network lost).
        var repeated = 0
        var excused: Set<Int> = []
        for calls in byGeneration.values where calls.count > 1 {
            for position in 1..<calls.count {
                if !calls[..<position].contains(where: \.boughtGrant) {
                    excused.insert(calls[position].index)
                } else {
                    repeated += 1
                }
            }
        }
        repeatedRedemptions = repeated
        reuseDetected = refreshes.count { $0.outcome == .reuseDetected && !excused.contains($0.index) }
        reuseAccepted = refreshes.count { $0.outcome == .reuseAccepted && !excused.contains($0.index) }
        revokedSessions = ledger.revokedFamilies.count

        // Refreshes after the session's client was told invalid_grant, sent when none of the
        // session's earlier refreshes was still open.
        var afterInvalid = 0
        for calls in byFamily.values {
            var toldAt = Int64.max
            var latestAnswer = Int64.min
            for call in calls.sorted(by: { $0.sentAt < $1.sentAt }) {
                if call.sentAt >= toldAt, call.sentAt >= latestAnswer { afterInvalid += 1 }
                let answered = call.respondedAt ?? .max
                latestAnswer = max(latestAnswer, answered)
                if call.isInvalidGrant { toldAt = min(toldAt, answered) }
            }
        }
        refreshesAfterInvalidGrant = afterInvalid

        // Refreshes of a fresh token right after a 401 for an older one, and of a token just
        // received with nothing said against it. The 401s by session, in time order.
        var issuedAt: [UInt64: TokenInstant] = [:]
        var deliveredAt: [UInt64: Int64] = [:]
        for entry in entries {
            guard let issued = entry.issuedGeneration else { continue }
            issuedAt[issued] = entry.at
            if entry.deliveredGrant, let answered = entry.respondedAt { deliveredAt[issued] = answered }
        }
        let rejections = ledger.resourceRejections
        var rejectionsOf: [UInt64: [ResourceRejection]] = [:]
        for rejection in rejections where rejection.family != 0 {
            rejectionsOf[rejection.family, default: []].append(rejection)
        }
        var stale = 0
        var backToBack = 0
        for call in redeemed {
            let generation = call.presentedGeneration!
            guard let issued = issuedAt[generation], call.at < issued + tokenLifetime else { continue }
            let session = rejectionsOf[call.family] ?? []
            let newestRefused = session.contains { $0.generation == generation && $0.at <= call.at }
            guard !newestRefused else { continue }
            let olderRefused = session.contains {
                $0.at >= issued && $0.at <= call.at && call.at.duration(since: $0.at) <= staleWindow
                    && ($0.generation ?? .max) < generation
            }
            if olderRefused {
                stale += 1
            } else if byGeneration[generation]?.first?.index == call.index, let arrived = deliveredAt[generation],
                call.sentAt >= arrived, Duration.nanoseconds(call.sentAt - arrived) <= staleWindow
            {
                // The token's first refresh (a repeated one is counted already).
                backToBack += 1
            }
        }
        staleRejectionRefreshes = stale
        backToBackRefreshes = backToBack

        // A refused token sent again long after its first refusal.
        var loops = 0
        for session in rejectionsOf.values {
            var firstRefused: [UInt64: TokenInstant] = [:]
            for rejection in session {
                guard let generation = rejection.generation else { continue }
                if let first = firstRefused[generation] {
                    if rejection.at.duration(since: first) > Self.loopWindow { loops += 1 }
                } else {
                    firstRefused[generation] = rejection.at
                }
            }
        }
        repeatedRejections = loops

        resourceAccepted = ledger.resourceAccepted
        resourceRejected = rejections.count
        resourceRejectedExpired = rejections.count { $0.reason == .expired }
        resourceRejectedRevoked = rejections.count { $0.reason == .revoked }
        resourceRejectedUnknown = rejections.count { $0.reason == .unknown }

        let perExpiry = refreshesPerExpiry.map { String(format: "%.2f", $0) } ?? "—"
        let window = staleWindow.secondsValue.formatted()
        checks = [
            Check(
                name: "single-flight", passed: overlapping + repeated + backToBack == 0,
                count: overlapping + repeated + backToBack,
                detail: refreshCalls == 0
                    ? "no refresh yet"
                    : "\(perExpiry) refreshes per expiry (\(redemptions) redemptions of \(expiriesRefreshed) refresh tokens); "
                        + "\(overlapping) started while another of the session was in flight; \(repeated) redeemed a used "
                        + "token; \(backToBack) refreshed a token within \(window) s of receiving it, with no 401 for it"),
            Check(
                name: "no-reuse", passed: repeated == 0 && reuseDetected + reuseAccepted == 0,
                count: max(repeated, reuseDetected + reuseAccepted),
                detail: "\(repeated) refresh(es) presented a used refresh token: \(reuseDetected) detected as reuse "
                    + "(\(revokedSessions) session(s) revoked), \(reuseAccepted) accepted in the grace window"),
            Check(
                name: "no-stale-401-refresh", passed: stale == 0, count: stale,
                detail: "\(stale) refresh(es) of an unexpired token within \(window) s "
                    + "of a 401 for an older one (\(rejections.count) 401s served)"),
            Check(
                name: "stops-after-invalid-grant", passed: afterInvalid == 0, count: afterInvalid,
                detail: "\(afterInvalid) refresh call(s) after the session's client was told invalid_grant, "
                    + "with no earlier refresh of it still open"),
            Check(
                name: "no-401-loop", passed: loops == 0, count: loops,
                detail: "\(loops) 401(s) for a token refused more than \(Self.loopWindow.secondsValue.formatted()) s before"),
            Check(
                name: "one-client-grant-at-a-time", passed: overlappingClientGrants == 0, count: overlappingClientGrants,
                detail: "\(clients) client(s) granted tokens by client credentials; \(overlappingClientGrants) grant(s) "
                    + "started while another for the same client was in flight"),
        ]
    }

    /// Calls that started while an earlier one of the same group was still unanswered.
    package static func overlapping(_ calls: [LedgerEntry]) -> Int {
        var count = 0
        var latestAnswer = Int64.min
        for call in calls.sorted(by: { $0.sentAt < $1.sentAt }) {
            if call.sentAt < latestAnswer { count += 1 }
            // A call the client abandoned is over for it when it hung up, which the server
            // learns a little later: its answer time does not hold later calls.
            guard call.outcome != .dropped, !call.lostByClient else { continue }
            latestAnswer = max(latestAnswer, call.respondedAt ?? .max)
        }
        return count
    }
}

extension LedgerVerdicts {
    /// The verdict lines, then the counts, aligned for a terminal.
    public func table() -> String {
        var lines = ["verdict: " + (passed ? "PASS" : "FAIL")]
        let width = checks.map(\.name.count).max() ?? 0
        for check in checks {
            let name = check.name.padding(toLength: width, withPad: " ", startingAt: 0)
            lines.append("  \(check.passed ? "pass" : "FAIL")  \(name)  \(check.detail)")
        }
        lines.append(
            "calls: \(signIns) sign-in(s), \(refreshCalls) refresh(es), \(resourceAccepted + resourceRejected) "
                + "resource request(s) (\(resourceRejected) answered 401: \(resourceRejectedExpired) expired, "
                + "\(resourceRejectedRevoked) revoked, \(resourceRejectedUnknown) unknown)")
        return lines.joined(separator: "\n") + "\n"
    }

    package static let csvColumns = [
        "verdict", "sign_ins", "clients", "overlapping_client_grants", "refresh_calls", "redemptions", "expiries_refreshed", "refreshes_per_expiry",
        "overlapping_refreshes", "back_to_back_refreshes", "repeated_redemptions", "reuse_detected", "reuse_accepted", "revoked_sessions",
        "stale_401_refreshes", "refreshes_after_invalid_grant", "repeated_401s", "resource_accepted", "resource_401",
        "resource_401_expired", "resource_401_revoked", "resource_401_unknown", "failed_checks",
    ]

    /// A header and one row; an empty field where there is no figure (no refresh yet).
    public func csv() -> String {
        let row: [String] = [
            passed ? "pass" : "fail", "\(signIns)", "\(clients)", "\(overlappingClientGrants)", "\(refreshCalls)",
            "\(redemptions)", "\(expiriesRefreshed)", refreshesPerExpiry.map { String(format: "%.4f", $0) } ?? "",
            "\(overlappingRefreshes)", "\(backToBackRefreshes)", "\(repeatedRedemptions)", "\(reuseDetected)",
            "\(reuseAccepted)", "\(revokedSessions)", "\(staleRejectionRefreshes)", "\(refreshesAfterInvalidGrant)",
            "\(repeatedRejections)", "\(resourceAccepted)", "\(resourceRejected)", "\(resourceRejectedExpired)",
            "\(resourceRejectedRevoked)", "\(resourceRejectedUnknown)",
            checks.filter { !$0.passed }.map(\.name).joined(separator: " "),
        ]
        return Self.csvColumns.joined(separator: ",") + "\n" + row.joined(separator: ",") + "\n"
    }

    /// Every figure and check, with `verdict` first.
    public func json() throws -> String {
        struct Document: Encodable {
            let verdict: String
            let verdicts: LedgerVerdicts
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(Document(verdict: passed ? "pass" : "fail", verdicts: self))
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    /// A table of the checks, for a step summary.
    public func markdown() -> String {
        var text = "**verdict: \(passed ? "PASS" : "FAIL")**\n\n| check | result | detail |\n|---|---|---|\n"
        for check in checks { text += "| \(check.name) | \(check.passed ? "pass" : "FAIL") | \(check.detail) |\n" }
        return text
    }
}
