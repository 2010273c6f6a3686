/// The block a run over a transport adds: what the transport added to each refresh, per store.
extension ResultsReport {
    static let transportColumns = ["store", "refreshes", "overhead p50", "overhead p99", "scenarios"]

    /// The transport's block heading, when any result ran over one.
    func transportHeading() -> String? {
        let names = Set(results.compactMap { $0.transport?.transport }).sorted()
        guard !names.isEmpty else { return nil }
        return "transport \(names.joined(separator: ", ")) — what it added to each refresh: the round trip less the "
            + "server's own time (Server-Timing); p50 as the range over the store's scenarios, p99 the largest"
    }

    /// One row per store that ran over a transport.
    func transportRows() -> [[String]] {
        var stores: [String] = []
        for result in results where result.transport != nil && !stores.contains(result.store) {
            stores.append(result.store)
        }
        return stores.map { store in
            let figures = results.filter { $0.store == store }.compactMap(\.transport)
            let p50s = figures.compactMap(\.overheadP50Nanoseconds)
            let p99 = figures.compactMap(\.overheadP99Nanoseconds).max()
            let range: String =
                if let low = p50s.min(), let high = p50s.max() {
                    low == high
                        ? Format.nanoseconds(low) : "\(Format.nanoseconds(low))–\(Format.nanoseconds(high))"
                } else { "—" }
            return [
                store, "\(figures.map(\.refreshes).reduce(0, +))", range, p99.map { Format.nanoseconds($0) } ?? "—",
                "\(figures.count { $0.refreshes > 0 }) of \(figures.count)",
            ]
        }
    }
}
