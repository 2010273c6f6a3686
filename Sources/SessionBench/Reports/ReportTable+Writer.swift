import SessionMeasurement
import SessionOracle

/// The writer's block of `writes-under-reads`: how long each 401 waited behind the readers, and
/// what the readers did meanwhile.
extension ResultsReport {
    func writerHeading(for scenario: String) -> String? {
        let block = results.filter { $0.scenario == scenario && $0.kind == .steadyReads }
        guard block.contains(where: { $0.latencies.contains { $0.kind == .syncWrite || $0.kind == .rejection } }) else {
            return nil
        }
        return "each 401's wait: under the async callers' reads (writes), under currentToken() on OS threads "
            + "(writes (sync)); the readers' calls/s while it wrote"
    }
}
