/// The block a run over a transport adds: what the transport added to each refresh, per store.
extension ResultsReport {
    /// The transport's block heading, when any result ran over one.
    func transportHeading() -> String? {
        let names = Set(results.compactMap { $0.transport?.transport }).sorted()
        guard !names.isEmpty else { return nil }
        return "transport \(names.joined(separator: ", ")) — what it added to each refresh: the round trip less the "
            + "server's own time (Server-Timing); p50 as the range over the store's scenarios, p99 the largest"
    }
}
