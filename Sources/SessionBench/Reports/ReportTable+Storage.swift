import Foundation
import SessionMeasurement
import SessionOracle

/// The block scenarios over storage add under their table: how sessions fared across
/// restarts, what each backend leaves on disk, and what a save costs.
extension ResultsReport {
    static let storageColumns = [
        "store", "backend", "restarts", "survived", "ended by reuse", "ended otherwise", "lost in flight",
        "lost before save", "lost mid-save", "plaintext at rest", "file mode", "save p50", "save p99", "storage calls in reads",
    ]

    static let sharedStorageColumns = [
        "store", "backend", "holders", "events", "refreshes", "refreshes per event", "taken from storage",
        "plaintext at rest", "file mode", "save p50", "save p99",
    ]

    static let replicaColumns = [
        "store", "backend", "replicas", "events", "refreshes", "refreshes per event", "taken from storage",
        "refresh wait p50", "save p50", "db calls in reads", "lock holder killed: back after", "lock timeout",
    ]

    func storageColumns(for scenario: String) -> [String] {
        if isReplicas(scenario) { return Self.replicaColumns }
        return isShared(scenario) ? Self.sharedStorageColumns : Self.storageColumns
    }

    private func isShared(_ scenario: String) -> Bool {
        results.contains { $0.scenario == scenario && $0.kind == .sharedStorage }
    }

    private func isReplicas(_ scenario: String) -> Bool {
        results.contains { $0.scenario == scenario && $0.kind == .replicas }
    }

    func storageHeading(for scenario: String) -> String? {
        let figures = results.filter { $0.scenario == scenario }.compactMap(\.persistence)
        guard let first = figures.first else { return nil }
        if isReplicas(scenario) {
            return "\(first.processes) replica processes share one session through a database server; each 401 "
                + "storm or expiry needs exactly one refresh in all, reads never reach the database, and a replica "
                + "killed while it holds the lock must not hold the others up past the lock's timeout"
        }
        if isShared(scenario) {
            return "\(first.processes) session processes × \(first.holders / max(1, first.processes)) store "
                + "instances share one saved session; each 401 storm or expiry needs exactly one refresh in all"
        }
        let processes = Set(figures.map(\.processes)).sorted().map(String.init).joined(separator: "–")
        let unplayed = figures.map(\.pointsNotPlayed.count).max() ?? 0
        return "\(processes) session processes, each ended at a seeded crash point and restarted on the same "
            + "storage; server reuse grace \(InputRange.text(first.reuseGraceSeconds))s"
            + (unplayed > 0
                ? "; warning: up to \(unplayed) crash point(s) never landed on a storm that refreshed (see the JSON)"
                : "")
    }

    func storageRows(for scenario: String) -> [[String]] {
        let block = results.filter { $0.scenario == scenario }
        let seedsVary = Set(block.map(\.seed)).count > 1
        return block.compactMap { result in
            guard let figures = result.persistence else { return nil }
            let save = result.latencies.first { $0.kind == .save }
            let name = seedsVary ? "\(result.store), seed \(result.seed)" : result.store
            if result.kind == .replicas {
                let wait = result.latencies.first { $0.kind == .refreshWait }
                return [
                    name, figures.backend, "\(figures.processes)", "\(result.storms)", "\(result.stormRefreshCalls)",
                    result.refreshesPerExpiry.map { String(format: "%.2f", $0) } ?? "—", "\(figures.grantsTaken)",
                    wait.map { Format.nanoseconds(Double($0.p50)) } ?? "—",
                    save.map { Format.nanoseconds(Double($0.p50)) } ?? "—",
                    figures.readsChecked > 0 ? "\(figures.storageCallsDuringReads) in \(figures.readsChecked)" : "—",
                    figures.lockHolderRecoverySeconds.map { Format.nanoseconds($0 * 1e9) } ?? "—",
                    figures.lockTimeoutSeconds.map { Format.nanoseconds($0 * 1e9) } ?? "none",
                ]
            }
            if result.kind == .sharedStorage {
                return [
                    name, figures.backend, "\(figures.holders)", "\(result.storms)", "\(result.stormRefreshCalls)",
                    result.refreshesPerExpiry.map { String(format: "%.2f", $0) } ?? "—",
                    "\(figures.grantsTaken)", figures.plaintextAtRest ? "yes" : "no", figures.fileMode ?? "—",
                    save.map { Format.nanoseconds(Double($0.p50)) } ?? "—",
                    save.map { Format.nanoseconds(Double($0.p99)) } ?? "—",
                ]
            }
            return [
                seedsVary ? "\(result.store), seed \(result.seed)" : result.store, figures.backend,
                "\(figures.restarts)", "\(figures.survived)", "\(figures.endedByReuse)", "\(figures.endedOtherwise)",
                "\(figures.rotationsLost(.inFlight))", "\(figures.rotationsLost(.beforeSave))",
                "\(figures.rotationsLost(.midSave))", figures.plaintextAtRest ? "yes" : "no", figures.fileMode ?? "—",
                save.map { Format.nanoseconds(Double($0.p50)) } ?? "—",
                save.map { Format.nanoseconds(Double($0.p99)) } ?? "—",
                figures.readsChecked > 0 ? "\(figures.storageCallsDuringReads) in \(figures.readsChecked)" : "—",
            ]
        }
    }
}
