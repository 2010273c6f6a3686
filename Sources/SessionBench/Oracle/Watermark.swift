/// The highest generation handed out by calls that had returned by a given instant, per
/// account, over the whole run. Only the points where that highest generation rises are kept
/// (one per generation ever handed out, not one per call), so a run of any length stays cheap.
struct Watermark {
    struct Point {
        let end: Int64
        let generation: UInt64
        let caller: Int
        let phase: String
    }

    private var points: [Int: [Point]] = [:]

    /// Adds calls, in any order relative to those added before.
    mutating func add(_ calls: [ObservedCall]) {
        var touched = Set<Int>()
        for call in calls {
            guard let issued = call.token else { continue }
            points[call.account, default: []].append(
                Point(end: call.endedNanos, generation: issued.generation, caller: call.caller, phase: call.phase))
            touched.insert(call.account)
        }
        for account in touched {
            var rising: [Point] = []
            for point in points[account]!.sorted(by: { $0.end < $1.end })
            where point.generation > (rising.last?.generation ?? 0) {
                rising.append(point)
            }
            points[account] = rising
        }
    }

    /// The highest generation among the calls of `account` that returned before `instant`.
    func highest(account: Int, endedBefore instant: Int64) -> Point? {
        guard let list = points[account], !list.isEmpty else { return nil }
        var low = 0
        var high = list.count
        while low < high {
            let mid = (low + high) / 2
            if list[mid].end < instant { low = mid + 1 } else { high = mid }
        }
        return low > 0 ? list[low - 1] : nil
    }
}
