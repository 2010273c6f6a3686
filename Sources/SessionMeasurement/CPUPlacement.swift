import CPlacement
import Foundation

/// Which CPUs the measuring process may run on, and pinning it to some (`--cpus`).
///
/// Every result records the CPUs its process could use when it ran, pinned or not, so two
/// runs placed differently are never compared unknowingly.
public enum CPUPlacement {
    /// The CPUs this process may run on now, ascending; empty if the system does not say.
    public static var allowed: [Int] {
        let limit = Int(session_bench_cpu_limit())
        var cpus = [Int32](repeating: 0, count: limit)
        let count = session_bench_allowed_cpus(&cpus, Int32(limit))
        return count > 0 ? cpus.prefix(Int(count)).map(Int.init) : []
    }

    /// Restricts this process, and every process it starts from now on, to `cpus`.
    public static func pin(_ cpus: [Int]) throws(PlacementError) {
        let available = allowed
        let missing = cpus.filter { !available.contains($0) }
        guard missing.isEmpty else {
            throw PlacementError(
                "--cpus: CPU \(text(missing)) is not one this process may use; it may use \(available.isEmpty ? "none that the system lists" : text(available))"
            )
        }
        let values = cpus.map(Int32.init)
        guard session_bench_pin_cpus(values, Int32(values.count)) == 0 else {
            throw PlacementError(
                "--cpus \(text(cpus)): the system refused to pin the process (\(String(cString: strerror(errno))))")
        }
    }

    /// How many CPUs the system has: a CPU number is below it.
    public static var limit: Int { Int(session_bench_cpu_limit()) }

    /// `[0, 1, 2, 5]` as `0-2,5`.
    public static func text(_ cpus: [Int]) -> String {
        var parts: [String] = []
        var index = 0
        let sorted = Array(Set(cpus)).sorted()
        while index < sorted.count {
            var end = index
            while end + 1 < sorted.count, sorted[end + 1] == sorted[end] + 1 { end += 1 }
            parts.append(end == index ? "\(sorted[index])" : "\(sorted[index])-\(sorted[end])")
            index = end + 1
        }
        return parts.joined(separator: ",")
    }
}

/// `--cpus` names CPUs the process may not use, or the system refused.
public struct PlacementError: Error, CustomStringConvertible {
    public let description: String
    package init(_ description: String) { self.description = description }
}
