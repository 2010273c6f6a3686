/// What a transport added to the refresh calls of one run.
public struct TransportFigures: Sendable, Hashable, Codable {
    public var transport: String
    /// Refresh calls measured.
    public var refreshes: Int
    public var overheadP50Nanoseconds: Double?
    public var overheadP99Nanoseconds: Double?

    public init(transport: String, overheads: [Int64]) {
        self.transport = transport
        refreshes = overheads.count
        let sorted = overheads.sorted()
        func percentile(_ fraction: Double) -> Double? {
            guard !sorted.isEmpty else { return nil }
            let rank = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
            return Double(sorted[min(max(rank, 0), sorted.count - 1)])
        }
        overheadP50Nanoseconds = percentile(0.50)
        overheadP99Nanoseconds = percentile(0.99)
    }
}
