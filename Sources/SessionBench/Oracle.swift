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
    public func report(_ invariant: Invariant, _ summary: @autoclosure () -> String, trace: @autoclosure () -> [String] = []) {
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

    // MARK: Checks over the server's ledger

    /// I1 and I7: no generation redeemed twice, no reuse seen by the server.
    public func checkLedger(_ ledger: Ledger, since start: Int = 0, context: String) {
        let entries = Array(ledger.entries.dropFirst(start))
        let window = Ledger.window(entries)
        for (generation, count) in window.repeatedRedemptions.sorted(by: { $0.key < $1.key }) {
            report(
                .singleFlight, "\(count) refresh calls redeemed generation \(generation)'s refresh token (\(context))",
                trace: entries.filter { $0.presentedGeneration == generation }.prefix(4).map(Self.describe))
        }
        if window.reuseCount > 0 {
            report(
                .noReuse, "the server saw a used refresh token \(window.reuseCount) time(s) (\(context))",
                trace: entries.filter { $0.outcome == .reuseDetected || $0.outcome == .reuseAccepted || $0.outcome == .familyRevoked }
                    .prefix(4).map(Self.describe))
        }
    }

    static func describe(_ entry: LedgerEntry) -> String {
        var line = "server call #\(entry.index) \(entry.call.rawValue) family \(entry.family)"
        if let presented = entry.presentedGeneration { line += " presenting generation \(presented)" }
        line += ": \(entry.outcome.rawValue)"
        if let issued = entry.issuedGeneration { line += " → generation \(issued)" }
        return line
    }
}

extension Ledger {
    /// A ledger holding just `entries`, to count within a slice of a run.
    static func window(_ entries: [LedgerEntry]) -> Ledger {
        var ledger = Ledger()
        ledger.replaceEntries(entries)
        return ledger
    }
}
