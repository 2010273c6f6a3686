import Foundation
import SessionMeasurement
import SessionOracle

/// The block scenarios over storage add under their table: how sessions fared across
/// restarts, what each backend leaves on disk, and what a save costs.
extension ResultsReport {
    /// The storage block's columns: `replicas`', `shared-storage`'s or `crash-restart`'s.
    func storageColumns(for scenario: String) -> [ReportColumn<ReportRow>] {
        if isReplicas(scenario) { return ReportColumns.replicas }
        return isShared(scenario) ? ReportColumns.sharedStorage : ReportColumns.storage
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
        let crowded = figures.compactMap(\.crowdedEvents).max() ?? 0
        let unjudged =
            crowded > 0
            ? "; warning: up to \(crowded) event(s) ran on a crowded machine, their failed lock waits not judged "
                + "(see the JSON)" : ""
        if isReplicas(scenario) {
            return "\(first.processes) replica processes share one session through a database server; each 401 "
                + "storm or expiry needs exactly one refresh in all, reads never reach the database, and a replica "
                + "killed while it holds the lock must not hold the others up past the lock's timeout" + unjudged
        }
        if isShared(scenario) {
            return "\(first.processes) session processes × \(first.holders / max(1, first.processes)) store "
                + "instances share one saved session; each 401 storm or expiry needs exactly one refresh in all"
                + unjudged
        }
        let processes = Set(figures.map(\.processes)).sorted().map(String.init).joined(separator: "–")
        let unplayed = figures.map(\.pointsNotPlayed.count).max() ?? 0
        return "\(processes) session processes, each ended at a seeded crash point and restarted on the same "
            + "storage; server reuse grace \(InputRange.text(first.reuseGraceSeconds))s"
            + (unplayed > 0
                ? "; warning: up to \(unplayed) crash point(s) never landed on a storm that refreshed (see the JSON)"
                : "")
    }
}
