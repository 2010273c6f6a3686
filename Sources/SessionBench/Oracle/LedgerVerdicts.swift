import Foundation
import SessionContract
import TokenServer

/// What a token server's ledger alone says about the clients that used it: the verdicts
/// `serve` prints for a client it cannot see inside (any library, any language). Every figure
/// is a count of calls the server received; none holds a token or a user id.
///
/// - **Single flight:** one session's refresh calls never overlap, and no refresh token is
///   redeemed twice (but after an answer the server itself lost, which the client never had).
/// - **No reuse:** the server never saw a used refresh token again.
/// - **No stale-401 refresh:** a 401 for a token older than the session's newest does not make
///   the client refresh the newest one: that token was fine, and the refresh was wasted.
/// - **Stops after `invalid_grant`:** once a session's refresh was refused as `invalid_grant`,
///   its client does not refresh it again (the user must sign in). Counted are the refreshes
///   that arrive after such an answer with none of the session's earlier refreshes still
///   open: a client retrying a dead session, not the tail of a burst sent before any answer.
/// - **One sign-in at a time:** grants for one user or client (password, client credentials)
///   never overlap; a client that answers a storm of 401s with a storm of new grants starts
///   a session per caller.
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
    /// Users and clients that signed in.
    public var principals: Int
    /// Sign-ins that started while another for the same user or client was in flight.
    public var overlappingSignIns: Int
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
    /// Redemptions of a refresh token already redeemed, lost answers excused.
    public var repeatedRedemptions: Int
    public var reuseDetected: Int
    public var reuseAccepted: Int
    public var revokedSessions: Int
    public var staleRejectionRefreshes: Int
    public var refreshesAfterInvalidGrant: Int
    public var resourceAccepted: Int
    public var resourceRejected: Int
    public var resourceRejectedExpired: Int
    public var resourceRejectedRevoked: Int
    public var resourceRejectedUnknown: Int
    public var checks: [Check]

    /// Whether every check passed.
    public var passed: Bool { checks.allSatisfy(\.passed) }

    /// How soon after a 401 for an older token a refresh counts as caused by it.
    public static let staleWindow: Duration = .seconds(1)

    public init(ledger: Ledger, tokenLifetime: Duration) {
        let entries = ledger.entries
        let refreshes = entries.filter { $0.call == .refresh }
        signIns = ledger.signInCalls
        refreshCalls = refreshes.count
        var grantsOf: [UInt64: [LedgerEntry]] = [:]
        for entry in entries where entry.call == .signIn {
            if let principal = entry.principal { grantsOf[principal, default: []].append(entry) }
        }
        principals = grantsOf.count
        overlappingSignIns = grantsOf.values.map(Self.overlapping).reduce(0, +)
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

        // Redeemed again after the client could have had the grant.
        var repeated = 0
        var excused: Set<Int> = []
        for calls in byGeneration.values where calls.count > 1 {
            for position in 1..<calls.count {
                if calls[..<position].allSatisfy({ $0.outcome == .responseLost && !$0.lostByClient }) {
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

        // Refreshes of a fresh token right after a 401 for an older one.
        var issuedAt: [UInt64: TokenInstant] = [:]
        for entry in entries { if let issued = entry.issuedGeneration { issuedAt[issued] = entry.at } }
        let rejections = ledger.resourceRejections
        var stale = 0
        for call in redeemed {
            let generation = call.presentedGeneration!
            guard let issued = issuedAt[generation], call.at < issued + tokenLifetime else { continue }
            let window = rejections.filter {
                $0.family == call.family && $0.at >= issued && $0.at <= call.at
                    && call.at.duration(since: $0.at) <= Self.staleWindow
            }
            let olderRefused = window.contains { ($0.generation ?? .max) < generation }
            let newestRefused = rejections.contains {
                $0.family == call.family && $0.generation == generation && $0.at <= call.at
            }
            if olderRefused && !newestRefused { stale += 1 }
        }
        staleRejectionRefreshes = stale

        resourceAccepted = ledger.resourceAccepted
        resourceRejected = rejections.count
        resourceRejectedExpired = rejections.count { $0.reason == .expired }
        resourceRejectedRevoked = rejections.count { $0.reason == .revoked }
        resourceRejectedUnknown = rejections.count { $0.reason == .unknown }

        let perExpiry = refreshesPerExpiry.map { String(format: "%.2f", $0) } ?? "—"
        checks = [
            Check(
                name: "single-flight", passed: overlapping == 0 && repeated == 0, count: overlapping + repeated,
                detail: refreshCalls == 0
                    ? "no refresh yet"
                    : "\(perExpiry) refreshes per expiry (\(redemptions) redemptions of \(expiriesRefreshed) refresh tokens); "
                        + "\(overlapping) started while another of the session was in flight; \(repeated) redeemed a used token"),
            Check(
                name: "no-reuse", passed: repeated == 0 && reuseDetected + reuseAccepted == 0,
                count: max(repeated, reuseDetected + reuseAccepted),
                detail: "\(repeated) refresh(es) presented a used refresh token: \(reuseDetected) detected as reuse "
                    + "(\(revokedSessions) session(s) revoked), \(reuseAccepted) accepted in the grace window, "
                    + "the rest refused as their session was already revoked"),
            Check(
                name: "no-stale-401-refresh", passed: stale == 0, count: stale,
                detail: "\(stale) refresh(es) of an unexpired token within \(Self.staleWindow.secondsValue.formatted()) s "
                    + "of a 401 for an older one (\(rejections.count) 401s served)"),
            Check(
                name: "stops-after-invalid-grant", passed: afterInvalid == 0, count: afterInvalid,
                detail: "\(afterInvalid) refresh call(s) after the session's client was told invalid_grant, "
                    + "with no earlier refresh of it still open"),
            Check(
                name: "one-sign-in-at-a-time", passed: overlappingSignIns == 0, count: overlappingSignIns,
                detail: "\(signIns) sign-in(s) for \(principals) user(s) or client(s); \(overlappingSignIns) started "
                    + "while another for the same one was in flight"),
        ]
    }

    /// Calls that started while an earlier one of the same group was still unanswered.
    static func overlapping(_ calls: [LedgerEntry]) -> Int {
        var count = 0
        var latestAnswer = Int64.min
        for call in calls.sorted(by: { $0.sentAt < $1.sentAt }) {
            if call.sentAt < latestAnswer { count += 1 }
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

    static let csvColumns = [
        "verdict", "sign_ins", "principals", "overlapping_sign_ins", "refresh_calls", "redemptions", "expiries_refreshed", "refreshes_per_expiry",
        "overlapping_refreshes", "repeated_redemptions", "reuse_detected", "reuse_accepted", "revoked_sessions",
        "stale_401_refreshes", "refreshes_after_invalid_grant", "resource_accepted", "resource_401",
        "resource_401_expired", "resource_401_revoked", "resource_401_unknown", "failed_checks",
    ]

    /// A header and one row; an empty field where there is no figure (no refresh yet).
    public func csv() -> String {
        let row: [String] = [
            passed ? "pass" : "fail", "\(signIns)", "\(principals)", "\(overlappingSignIns)", "\(refreshCalls)", "\(redemptions)", "\(expiriesRefreshed)",
            refreshesPerExpiry.map { String(format: "%.4f", $0) } ?? "", "\(overlappingRefreshes)",
            "\(repeatedRedemptions)", "\(reuseDetected)", "\(reuseAccepted)", "\(revokedSessions)",
            "\(staleRejectionRefreshes)", "\(refreshesAfterInvalidGrant)", "\(resourceAccepted)", "\(resourceRejected)",
            "\(resourceRejectedExpired)", "\(resourceRejectedRevoked)", "\(resourceRejectedUnknown)",
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
