import Foundation
import SessionMeasurement
import SessionOracle

/// Writing thresholds: the same checks, their limits re-derived from a run with headroom,
/// for a reviewer to commit.
extension Thresholds {
    /// Limits loose enough to pass this run on a noisy machine and tight enough to catch a
    /// real regression: counts get 25% (exact ones none), ratios a factor of 1.5.
    public func updated(from results: [ScenarioResult]) -> Thresholds {
        let check = ThresholdCheck(thresholds: self, results: results)
        var updated = self
        for index in updated.limits.indices {
            let limit = updated.limits[index]
            let values: [Double] = results.filter { check.matches($0, limit) }.compactMap { result in
                guard let value = limit.metric.value(in: result, operation: limit.operation) else { return nil }
                switch limit.bound {
                case .max, .min: return value
                case .maxRatio(_, let reference), .minRatio(_, let reference):
                    guard let denominator = check.resolve(reference, for: limit, result: result).0, denominator > 0
                    else { return nil }
                    return value / denominator
                }
            }
            guard let worstHigh = values.max(), let worstLow = values.min() else { continue }
            switch limit.bound {
            case .max:
                // An exact count that is a whole number stays exact (one refresh per expiry).
                let isExact = limit.metric == .refreshesPerExpiry || limit.metric == .refreshCalls
                updated.limits[index].bound = .max(
                    isExact ? worstHigh.rounded(.up) : Self.round(worstHigh * 1.25 + 0.01))
            case .min:
                updated.limits[index].bound = .min(Self.round(worstLow * 0.8))
            case .maxRatio(_, let reference):
                updated.limits[index].bound = .maxRatio(Self.round(worstHigh * 1.5), of: reference)
            case .minRatio(_, let reference):
                updated.limits[index].bound = .minRatio(Self.round(worstLow / 1.5), of: reference)
            }
        }
        return updated
    }

    static func round(_ value: Double) -> Double { (value * 100).rounded(.up) / 100 }

    /// The file's JSON, keys in a fixed order so reviews show only what changed.
    public func json() -> String {
        func quoted(_ text: String) -> String {
            "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }
        func number(_ value: Double) -> String { ThresholdCheck.format(value) }
        var runParts: [String] = []
        if !run.stores.isEmpty { runParts.append("\"stores\": [\(run.stores.map(quoted).joined(separator: ", "))]") }
        if !run.scenarios.isEmpty {
            runParts.append("\"scenarios\": [\(run.scenarios.map(quoted).joined(separator: ", "))]")
        }
        if let duration = run.duration { runParts.append("\"duration\": \(quoted(duration))") }
        if let rounds = run.rounds { runParts.append("\"rounds\": \(rounds)") }
        if !run.scenarioRounds.isEmpty {
            let each = run.scenarioRounds.sorted { $0.key < $1.key }.map { "\(quoted($0.key)): \($0.value)" }
            runParts.append("\"scenario_rounds\": { \(each.joined(separator: ", ")) }")
        }
        if let tasks = run.tasks { runParts.append("\"tasks\": \(tasks)") }
        if let seed = run.seed { runParts.append("\"seed\": \(seed)") }
        if let allocator = run.allocator { runParts.append("\"allocator\": \(quoted(allocator.rawValue))") }
        if let counter = run.allocationCounter {
            runParts.append("\"allocation_counter\": \(quoted(counter.rawValue))")
        }
        let limitLines = limits.map { limit -> String in
            var parts = [
                "\"metric\": \(quoted(limit.metric.name))", "\"store\": \(quoted(limit.store))",
                "\"scenario\": \(quoted(limit.scenario))",
            ]
            if let operation = limit.operation { parts.append("\"operation\": \(quoted(operation.rawValue))") }
            switch limit.bound {
            case .max(let value): parts.append("\"max\": \(number(value))")
            case .min(let value): parts.append("\"min\": \(number(value))")
            case .maxRatio(let value, let reference):
                parts += ["\"max_ratio\": \(number(value))", "\"of\": \(referenceJSON(reference, quoted))"]
            case .minRatio(let value, let reference):
                parts += ["\"min_ratio\": \(number(value))", "\"of\": \(referenceJSON(reference, quoted))"]
            }
            return "    { " + parts.joined(separator: ", ") + " }"
        }
        return """
            {
              "version": 1,
              "run": { \(runParts.joined(separator: ", ")) },
              "limits": [
            \(limitLines.joined(separator: ",\n"))
              ]
            }

            """
    }

    private func referenceJSON(_ reference: Reference, _ quoted: (String) -> String) -> String {
        switch reference {
        case .harnessOverhead: return "{ \"baseline\": \"harness_overhead_ns\" }"
        case .emptyStore: return "{ \"baseline\": \"empty_store\" }"
        case .bareLoop: return "{ \"baseline\": \"bare_loop\" }"
        case .plainLoad: return "{ \"baseline\": \"plain_load\" }"
        case .clockedLoad: return "{ \"baseline\": \"clocked_load\" }"
        case .result(let store, let scenario):
            let parts = [store.map { "\"store\": \(quoted($0))" }, scenario.map { "\"scenario\": \(quoted($0))" }]
                .compactMap { $0 }
            return "{ " + parts.joined(separator: ", ") + " }"
        }
    }
}
