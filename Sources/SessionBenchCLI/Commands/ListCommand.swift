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
        let width = column(stores.map(\.name), atLeast: 16)
        lines.append("stores:")
        for store in stores {
            // What the store declares: each requirement a family's scenarios run on, marked
            // as the family names it.
            let marks =
                [store.isReferenceBroken ? "reference-broken" : nil, store.offersSynchronousRead ? "sync read" : nil]
                .compactMap { $0 } + StoreRequirement.required.filter { $0.isMet(by: store) }.map(\.mark)
                // Declared, so its I6 findings are reported as known (docs/expectations.md).
                + (store.refreshesUnconditionallyOn401 ? ["declares: unconditional 401 refresh, I6 expected"] : [])
            let suffix = marks.isEmpty ? "" : "  [\(marks.joined(separator: ", "))]"
            lines.append("  \(padded(store.name, width)) \(store.summary)\(suffix)")
        }
        lines.append("scenarios:")
        let scenarioWidth = column(ScenarioCatalog.all.map(\.name))
        for scenario in ScenarioCatalog.all {
            lines.append("  \(padded(scenario.name, scenarioWidth)) \(ScenarioText.summary(scenario))")
        }
        lines.append(
            "storage backends (crash-restart:NAME and shared-storage:NAME in a folder; replicas:NAME on a server):")
        // Every name whole, the left-out ones too: each is what a scenario name takes.
        let backendWidth = column(StorageBackendCatalog.all.map(\.name) + StorageBackendCatalog.leftOut.map(\.name))
        for backend in StorageBackendCatalog.all {
            let marks = [
                backend.isServer ? "PostgreSQL: SESSION_BENCH_POSTGRES_URL" : nil,
                backend.isReferenceBroken ? "reference-broken" : nil, backend.protectsAtRest ? "protects at rest" : nil,
            ]
            .compactMap { $0 }
            let suffix = marks.isEmpty ? "" : "  [\(marks.joined(separator: ", "))]"
            lines.append("  \(padded(backend.name, backendWidth)) \(backend.summary)\(suffix)")
        }
        for leftOut in StorageBackendCatalog.leftOut {
            lines.append(
                "  \(padded(leftOut.name, backendWidth)) left out of this build: needs the \(leftOut.trait) trait "
                    + "(--traits \(leftOut.trait))")
        }
        return lines
    }

    /// The width of a column of `names`: the longest and one more, so that no name is cut.
    private static func column(_ names: [String], atLeast minimum: Int = 20) -> Int {
        max(minimum, (names.map(\.count).max() ?? 0) + 1)
    }

    /// `name` filled with spaces to `width`; never cut.
    private static func padded(_ name: String, _ width: Int) -> String {
        name + String(repeating: " ", count: max(0, width - name.count))
    }
}
