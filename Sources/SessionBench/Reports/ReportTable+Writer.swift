import SessionMeasurement
import SessionOracle

/// The writer's block of `writes-under-reads`: how long each 401 waited behind the readers, and
/// what the readers did meanwhile.
extension ResultsReport {
    static let writerColumns = [
        "store", "writes", "writer p50", "writer p99", "reads/s", "writes (sync)", "writer p50 (sync)",
        "writer p99 (sync)", "sync reads/s",
    ]

    func writerHeading(for scenario: String) -> String? {
        let block = results.filter { $0.scenario == scenario && $0.kind == .steadyReads }
        guard block.contains(where: { $0.latencies.contains { $0.kind == .syncWrite || $0.kind == .rejection } }) else {
            return nil
        }
        return "each 401's wait: under the async callers' reads (writes), under currentToken() on OS threads "
            + "(writes (sync)); the readers' calls/s while it wrote"
    }

    func writerRows(for scenario: String) -> [[String]] {
        results.filter { $0.scenario == scenario && $0.kind == .steadyReads }.map { result in
            let async = result.latencies.first { $0.kind == .rejection }
            let sync = result.latencies.first { $0.kind == .syncWrite }
            return [
                result.store, async.map { "\($0.count)" } ?? "—",
                async.map { Format.nanoseconds(Double($0.p50)) } ?? "—",
                async.map { Format.nanoseconds(Double($0.p99)) } ?? "—",
                result.operations > 0 ? Format.rate(result.throughput) : "—",
                sync.map { "\($0.count)" } ?? "—",
                sync.map { Format.nanoseconds(Double($0.p50)) } ?? "—",
                sync.map { Format.nanoseconds(Double($0.p99)) } ?? "—",
                sync != nil ? result.syncRead.map { Format.rate($0.throughput) } ?? "—" : "—",
            ]
        }
    }
}
