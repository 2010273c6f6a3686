/// The highest generation handed out by calls that had returned by a given instant, per
/// session (server family), over the whole run. Only the points where that highest generation
/// rises are kept (one per generation ever handed out, not one per call), so a run of any length
/// stays cheap.
package struct Watermark {
    package struct Point {
        package let end: Int64
        package let generation: UInt64
        package let caller: Int
        package let phase: String
    }

    private var points: [UInt64: [Point]] = [:]

    /// Adds calls that returned a token, each with its session, in any order relative to those
    /// added before.
    package mutating func add(_ handouts: [(call: ObservedCall, family: UInt64)]) {
        var touched = Set<UInt64>()
        for (call, family) in handouts {
            guard let issued = call.token else { continue }
            points[family, default: []].append(
                Point(end: call.endedNanos, generation: issued.generation, caller: call.caller, phase: call.phase))
            touched.insert(family)
        }
        for family in touched {
            var rising: [Point] = []
            for point in points[family]!.sorted(by: { $0.end < $1.end })
            where point.generation > (rising.last?.generation ?? 0) {
                rising.append(point)
            }
            points[family] = rising
        }
    }

    /// The highest generation of `family` among the calls that returned before `instant`.
    package func highest(family: UInt64, endedBefore instant: Int64) -> Point? {
        guard let list = points[family], !list.isEmpty else { return nil }
        var low = 0
        var high = list.count
        while low < high {
            let mid = (low + high) / 2
            if list[mid].end < instant { low = mid + 1 } else { high = mid }
        }
        return low > 0 ? list[low - 1] : nil
    }
}
