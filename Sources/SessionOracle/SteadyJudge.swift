import Foundation
import SessionContract
import TokenServer

/// What a steady run recorded, for ``SteadyJudge``: the sign-in, the errors callers got (the
/// first few of each worker's, with their timing), the synchronous reads' empty answers, and
/// the server's ledger at the run's end. (Each read's freshness and order are checked in place
/// by the reading worker: recording every read of a loop that makes millions a second would
/// measure the recorder.)
package struct SteadyHistory: Sendable {
    /// The synchronous reads' phase: how many of its calls answered nil, of how many, from when to
    /// when (real nanoseconds, the store's clock), and the ledger as it stood when it ended.
    package struct Misses: Sendable {
        package var count: UInt64
        package var calls: UInt64
        package var from: (Int64, TokenInstant)
        package var to: (Int64, TokenInstant)
        package var entries: [LedgerEntry]
        package var issued: [UInt64: TokenServer.IssuedToken]

        package init(
            count: UInt64, calls: UInt64, from: (Int64, TokenInstant), to: (Int64, TokenInstant),
            entries: [LedgerEntry], issued: [UInt64: TokenServer.IssuedToken]
        ) {
            self.count = count
            self.calls = calls
            self.from = from
            self.to = to
            self.entries = entries
            self.issued = issued
        }
    }

    package var signedIn: SessionEvent
    /// How close to expiry a token the store already held may be when handed out.
    package var skew: Duration
    package var errors: [ObservedCall] = []
    package var misses: Misses?
    /// Whether callers only read (no 401s, no writes): then a token never near expiry needs no refresh.
    package var readsOnly: Bool
    /// The store's clock when the run ended.
    package var endedAt: TokenInstant
    package var entries: [LedgerEntry] = []
    package var issued: [UInt64: TokenServer.IssuedToken] = [:]

    package init(signedIn: SessionEvent, skew: Duration, readsOnly: Bool, endedAt: TokenInstant) {
        self.signedIn = signedIn
        self.skew = skew
        self.readsOnly = readsOnly
        self.endedAt = endedAt
    }
}

/// Judges a steady run: every nil of the synchronous reads needs a reason (I4), every error a
/// cause in the ledger (``ContractJudge``), the ledger is audited, and reads alone of a token
/// never near expiry need no refresh (I1).
package enum SteadyJudge {
    package typealias Finding = ContractJudge.Finding

    package static func judge(_ history: SteadyHistory) -> [Finding] {
        var findings: [Finding] = []
        if let misses = history.misses {
            let timeline = SessionTimeline(events: [history.signedIn], entries: misses.entries, issued: misses.issued)
            if let finding = ContractJudge(skew: history.skew).judgeMisses(
                misses.count, of: misses.calls + misses.count, account: 0, timeline: timeline, from: misses.from,
                to: misses.to)
            {
                findings.append(finding)
            }
        }
        let timeline = SessionTimeline(events: [history.signedIn], entries: history.entries, issued: history.issued)
        var contract = ContractJudge(skew: .zero)
        findings += contract.findings(history.errors.sorted { $0.startedNanos < $1.startedNanos }, timeline: timeline)
        findings += contract.serverCallFindings(timeline)
        findings += Oracle.ledgerFindings(history.entries) { _ in true }
        if let finding = refreshedForNothing(history) { findings.append(finding) }
        return findings
    }

    /// Reads alone (no 401s) of a token that was never near expiry need no refresh at all: a store
    /// that refreshes a fresh token on its own is refreshing for nothing (I1: no expiry, yet refresh
    /// calls).
    static func refreshedForNothing(_ history: SteadyHistory) -> Finding? {
        guard history.readsOnly else { return nil }
        let entries = history.entries
        guard let first = entries.first(where: { $0.call == .signIn }), let generation = first.issuedGeneration,
            let expiry = history.issued[generation]?.expiresAt, expiry > history.endedAt + history.skew
        else { return nil }
        let refreshes = entries.filter { $0.call == .refresh }
        guard let earliest = refreshes.first else { return nil }
        let left = (expiry.duration(since: history.endedAt).secondsValue * 10).rounded() / 10
        return Finding(
            invariant: .singleFlight,
            summary:
                "\(refreshes.count) refresh call(s) while callers only read a token that was never near expiry: a fresh token is handed out as it is",
            trace: [
                "the token expires \(Oracle.text(left)) s after the run ended; no caller reported a 401",
                "the first: " + Oracle.describe(earliest),
            ])
    }
}
