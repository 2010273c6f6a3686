import SessionMeasurement

extension ScenarioResult {
    /// The latency summary of the scenario's main operation.
    public var headlineLatency: LatencySummary? {
        let preferred = ScenarioFamilies.family(of: kind).headlineOperations(kind)
        for kind in preferred { if let summary = latencies.first(where: { $0.kind == kind }) { return summary } }
        return latencies.first
    }
}
