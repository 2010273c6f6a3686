import Foundation
import SessionContract
import Synchronization
import TokenServer

/// Collects invariant violations during a run: the first of each invariant with its trace,
/// and a count of the rest. Thread-safe; workers report into it directly.
public final class Oracle: Sendable {
    private let scenario: String
    private let seed: UInt64
    private let found = Mutex<[Invariant: Violation]>([:])

    public init(scenario: String, seed: UInt64) {
        self.scenario = scenario
        self.seed = seed
    }

    /// Records that `invariant` broke.
    public func report(
        _ invariant: Invariant, _ summary: @autoclosure () -> String, trace: @autoclosure () -> [String] = []
    ) {
        found.withLock { found in
            if found[invariant] != nil {
                found[invariant]!.occurrences += 1
            } else {
                found[invariant] = Violation(
                    invariant: invariant, scenario: scenario, seed: seed, summary: summary(), trace: trace(),
                    occurrences: 1)
            }
        }
    }

    /// Everything found so far, by invariant id.
    public var violations: [Violation] {
        found.withLock { $0.values.sorted { $0.invariant.rawValue < $1.invariant.rawValue } }
    }

    /// Records a judge's finding.
    package func report(_ finding: ContractJudge.Finding) {
        report(finding.invariant, finding.summary, trace: finding.trace)
    }

    /// Records what a judge found over a run's history, in the order it found it.
    package func record(_ findings: [ContractJudge.Finding]) {
        for finding in findings { report(finding) }
    }

    // MARK: Checks over the server's ledger

    /// I1, I7 and I11 over every refresh the server saw, in any scenario:
    /// - two refresh calls of one session in flight at once (I1);
    /// - a refresh token presented again after it bought the client a grant
    ///   (``LedgerEntry/boughtGrant``; I1, and I7 when the server saw the reuse). A retry after an
    ///   answer lost on the way
    ///   (an injected fault) is the only way a correct client can present a used token, and
    ///   is not counted;
    /// - any other reuse the server saw (I7).
    ///
    /// A refresh call the store cancelled itself (a dropped connection) is no violation on its
    /// own — cancelling a refresh nobody waits for any more is a fair design — but a caller
    /// that was not cancelled and failed with it is (the judge's I11), and so is a reuse of the
    /// token whose answer the store hung up on (I1, I7).
    ///
    /// `observed` tells whether any caller was handed a generation, for traces that point
    /// from a reuse back to the refresh whose result the store dropped.
    package func auditLedger(_ entries: [LedgerEntry], observed: (UInt64) -> Bool) {
        record(Self.ledgerFindings(entries, observed: observed))
    }

    /// What ``auditLedger(_:observed:)`` finds over `entries`, in the order it finds it.
    package static func ledgerFindings(_ entries: [LedgerEntry], observed: (UInt64) -> Bool)
        -> [ContractJudge.Finding]
    {
        var findings: [ContractJudge.Finding] = []
        func report(_ invariant: Invariant, _ summary: String, trace: [String]) {
            findings.append(.init(invariant: invariant, summary: summary, trace: trace))
        }
        let refreshes = entries.filter { $0.call == .refresh }
        // Concurrent refreshes of one session.
        var byFamily: [UInt64: [LedgerEntry]] = [:]
        for entry in refreshes where entry.family != 0 { byFamily[entry.family, default: []].append(entry) }
        for family in byFamily.keys.sorted() {
            let calls = byFamily[family]!.sorted { $0.sentAt < $1.sentAt }
            var open: LedgerEntry?
            for call in calls {
                if let earlier = open, call.sentAt < (earlier.respondedAt ?? .max) {
                    report(
                        .singleFlight, "two refresh calls of one session were in flight at once (family \(family))",
                        trace: [Self.describe(earlier), Self.describe(call)])
                }
                if (call.respondedAt ?? .max) > (open?.respondedAt ?? .min) { open = call }
            }
        }
        // The same refresh token redeemed twice.
        var redemptions: [UInt64: [LedgerEntry]] = [:]
        for entry in refreshes where entry.isRedemption {
            if let generation = entry.presentedGeneration { redemptions[generation, default: []].append(entry) }
        }
        var excused: Set<Int> = []
        for generation in redemptions.keys.sorted() {
            let calls = redemptions[generation]!
            for (position, call) in calls.enumerated() where position > 0 {
                // Nothing before it bought the client a grant (answers lost in the network, refusals):
                // the client never had the new token. A presentation after a refusal is a refresh of
                // a refused session, which the judge's I27 and the overlap check above say.
                guard let first = calls[..<position].first(where: \.boughtGrant) else {
                    excused.insert(call.index)
                    continue
                }
                report(
                    .singleFlight,
                    "generation \(generation)'s refresh token was redeemed again after the client had the grant it bought",
                    trace: [Self.describe(first) + Self.fate(of: first, observed: observed), Self.describe(call)])
            }
        }
        let reuses = refreshes.filter {
            ($0.outcome == .reuseDetected || $0.outcome == .reuseAccepted) && !excused.contains($0.index)
        }
        if let reuse = reuses.first {
            let earlier = redemptions[reuse.presentedGeneration ?? 0]?.first { $0.index < reuse.index }
            report(
                .noReuse, "the server saw a used refresh token \(reuses.count) time(s)",
                trace: (earlier.map {
                    ["first redeemed by " + Self.describe($0) + Self.fate(of: $0, observed: observed)]
                } ?? [])
                    + reuses.prefix(3).map { "reused by " + Self.describe($0) })
        }
        return findings
    }

    /// What became of a redemption's grant, for traces that explain a later reuse.
    package static func fate(of entry: LedgerEntry, observed: (UInt64) -> Bool) -> String {
        guard let issued = entry.issuedGeneration else { return "" }
        if entry.outcome == .responseLost {
            return entry.lostByClient ? " (the client hung up before the answer arrived)" : ""
        }
        return observed(issued)
            ? " (generation \(issued) was handed to callers)"
            : " (generation \(issued) was never handed to any caller: the store dropped the grant, refresh token included)"
    }

    /// `value` as a finding writes a figure: whole numbers plainly, others with up to 6
    /// significant digits (as the tool reads and writes numbers everywhere).
    package static func text(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(format: "%g", value)
    }

    package static func describe(_ entry: LedgerEntry) -> String {
        var line = "server call #\(entry.index) \(entry.call.rawValue) family \(entry.family)"
        if let presented = entry.presentedGeneration { line += " presenting generation \(presented)" }
        line += ": \(entry.outcome.rawValue)"
        if let issued = entry.issuedGeneration { line += " → generation \(issued)" }
        if entry.deliveredExpired { line += " (already expired on arrival)" }
        if entry.lostByClient { line += " (client hung up)" }
        if entry.respondedAt == nil { line += ", still unanswered" }
        if !entry.context.isEmpty { line += " [\(entry.context)]" }
        return line
    }
}

extension Ledger {
    /// A ledger holding just `entries`, to count within a slice of a run.
    package static func window(_ entries: [LedgerEntry]) -> Ledger {
        var ledger = Ledger()
        ledger.replaceEntries(entries)
        return ledger
    }
}
