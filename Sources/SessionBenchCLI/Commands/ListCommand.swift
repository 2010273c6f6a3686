import ArgumentParser
import Foundation
import SessionBench
import SessionContract
import SessionStorage

/// `session-bench list`: what there is to run.
struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the stores, scenarios and storage backends, one per line.")

    func run() throws {
        // Standard output is an output: written whole, or a one-line error.
        try OutputWriter.show(Self.lines(stores: StoreRegistry.all).joined(separator: "\n") + "\n")
    }

    /// What `list` prints for `stores`, the scenarios and this build's backends.
    static func lines(stores: [StoreDescriptor]) -> [String] {
        var lines: [String] = []
        let width = max(16, (stores.map(\.name.count).max() ?? 0) + 1)
        lines.append("stores:")
        for store in stores {
            let marks = [
                store.isReferenceBroken ? "reference-broken" : nil, store.offersSynchronousRead ? "sync read" : nil,
                store.persistsSession ? "storage" : nil, store.sharesStorage ? "shared storage" : nil,
                store.offersStepUp ? "step-up" : nil, store.offersStateStream ? "state stream" : nil,
                // Declared, so its I6 findings are reported as known (docs/expectations.md).
                store.refreshesUnconditionallyOn401 ? "declares: unconditional 401 refresh, I6 expected" : nil,
            ]
            .compactMap { $0 }
            let suffix = marks.isEmpty ? "" : "  [\(marks.joined(separator: ", "))]"
            lines.append("  \(store.name.padding(toLength: width, withPad: " ", startingAt: 0)) \(store.summary)\(suffix)")
        }
        lines.append("scenarios:")
        for scenario in ScenarioCatalog.all {
            let name = scenario.name.padding(toLength: 20, withPad: " ", startingAt: 0)
            lines.append("  \(name) \(ScenarioText.summary(scenario))")
        }
        lines.append("storage backends (crash-restart:NAME and shared-storage:NAME in a folder; replicas:NAME on a server):")
        let backendWidth = max(20, (StorageBackendCatalog.all.map(\.name.count).max() ?? 0) + 1)
        for backend in StorageBackendCatalog.all {
            let marks = [
                backend.isServer ? "PostgreSQL: SESSION_BENCH_POSTGRES_URL" : nil,
                backend.isReferenceBroken ? "reference-broken" : nil, backend.protectsAtRest ? "protects at rest" : nil,
            ]
            .compactMap { $0 }
            let suffix = marks.isEmpty ? "" : "  [\(marks.joined(separator: ", "))]"
            let name = backend.name.padding(toLength: backendWidth, withPad: " ", startingAt: 0)
            lines.append("  \(name) \(backend.summary)\(suffix)")
        }
        for leftOut in StorageBackendCatalog.leftOut {
            let name = leftOut.name.padding(toLength: backendWidth, withPad: " ", startingAt: 0)
            lines.append("  \(name) left out of this build: needs the \(leftOut.trait) trait (--traits \(leftOut.trait))")
        }
        return lines
    }
}
