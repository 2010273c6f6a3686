import Foundation
import SessionMeasurement
import SessionOracle

/// One line of the gate's verdict: what was checked, against what, what was measured.
public struct CheckOutcome: Sendable, Codable, Hashable {
    public let check: String
    public let limit: String
    public let measured: String
    public let passed: Bool
    /// The limit's place in the thresholds file, or `invariants`.
    public let source: String
}

/// Evaluates thresholds against one run's results.
public struct ThresholdCheck: Sendable {
    public let thresholds: Thresholds
    public let results: [ScenarioResult]

    public init(thresholds: Thresholds, results: [ScenarioResult]) {
        self.thresholds = thresholds
        self.results = results
    }

    /// Every check: invariants first (always enforced), then each limit for each result it names.
    public func evaluate() -> [CheckOutcome] {
        var outcomes: [CheckOutcome] = []
        for result in results {
            let passed = result.verdict.passes
            let found = result.violations.map { $0.invariant.id }.joined(separator: ",")
            let measured: String
            switch result.verdict {
            case .pass: measured = "all held"
            case .violated: measured = "violated \(found)"
            case .hung: measured = "hung"
            case .crashed: measured = "crashed"
            case .error: measured = "error: \(result.failure ?? "")"
            case .notRun: measured = "not run: \(result.failure ?? "")"
            case .known: measured = "violated \(found), every one expected"
            }
            outcomes.append(
                CheckOutcome(
                    check: "\(result.store) × \(result.scenario): invariants", limit: "all hold", measured: measured,
                    passed: passed, source: "invariants"))
        }
        for limit in thresholds.limits {
            let matching = results.filter { self.matches($0, limit) }
            if matching.isEmpty {
                outcomes.append(
                    CheckOutcome(
                        check: describe(limit, store: limit.store, scenario: limit.scenario), limit: boundText(limit),
                        measured: "no result in this run", passed: false, source: limit.location))
                continue
            }
            for result in matching {
                guard let outcome = evaluate(limit, on: result) else { continue }
                outcomes.append(outcome)
            }
        }
        return outcomes
    }

    func matches(_ result: ScenarioResult, _ limit: Thresholds.Limit) -> Bool {
        (limit.store == "*" || limit.store == result.store)
            && (limit.scenario == "*" || limit.scenario == result.scenario)
    }

    /// `nil` when a wildcard limit does not apply to this result (the metric is not measured there).
    func evaluate(_ limit: Thresholds.Limit, on result: ScenarioResult) -> CheckOutcome? {
        let isWildcard = limit.store == "*" || limit.scenario == "*"
        let check = describe(limit, store: result.store, scenario: result.scenario)
        // Counts from one counter are never held to limits set with another.
        let expected = thresholds.run.allocationCounter ?? .interposer
        if limit.metric.isAllocationFigure, let counter = result.allocationCounter, counter != expected {
            return CheckOutcome(
                check: check, limit: boundText(limit),
                measured:
                    "counted by the \(counter.rawValue), but the limits are for the \(expected.rawValue): not comparable",
                passed: false, source: limit.location)
        }
        guard let value = limit.metric.value(in: result, operation: limit.operation) else {
            if isWildcard { return nil }
            return CheckOutcome(
                check: check, limit: boundText(limit), measured: "not measured", passed: false, source: limit.location)
        }
        switch limit.bound {
        case .max(let max):
            return CheckOutcome(
                check: check, limit: "≤ \(Self.format(max))", measured: Self.format(value), passed: value <= max,
                source: limit.location)
        case .min(let min):
            return CheckOutcome(
                check: check, limit: "≥ \(Self.format(min))", measured: Self.format(value), passed: value >= min,
                source: limit.location)
        case .maxRatio(let ratio, let reference), .minRatio(let ratio, let reference):
            let isMax = if case .maxRatio = limit.bound { true } else { false }
            let (denominator, name) = resolve(reference, for: limit, result: result)
            guard let denominator, denominator > 0 else {
                return CheckOutcome(
                    check: check, limit: "\(isMax ? "≤" : "≥") \(Self.format(ratio))× \(name)",
                    measured: "\(name) not measured", passed: false, source: limit.location)
            }
            let measured = value / denominator
            return CheckOutcome(
                check: check, limit: "\(isMax ? "≤" : "≥") \(Self.format(ratio))× \(name)",
                measured: "\(Self.format(measured))× (\(Self.format(value)) / \(Self.format(denominator)))",
                passed: isMax ? measured <= ratio : measured >= ratio, source: limit.location)
        }
    }

    /// The value a ratio divides by, and how to name it.
    func resolve(_ reference: Thresholds.Reference, for limit: Thresholds.Limit, result: ScenarioResult) -> (
        Double?, String
    ) {
        switch reference {
        case .harnessOverhead:
            return (result.harnessOverheadNanoseconds, "harness overhead")
        case .emptyStore:
            return (result.emptyStoreThroughput, "empty-store loop")
        case .bareLoop:
            return (result.bareLoopThroughput, "bare loop")
        case .plainLoad:
            return (result.syncRead?.plainLoadThroughput, "plain load")
        case .clockedLoad:
            return (result.syncRead?.clockedLoadThroughput, "clocked load")
        case .result(let store, let scenario):
            let store = store ?? result.store
            let scenario = scenario ?? result.scenario
            let other = results.first { $0.store == store && $0.scenario == scenario }
            return (other.flatMap { limit.metric.value(in: $0, operation: limit.operation) }, "\(store) × \(scenario)")
        }
    }

    func describe(_ limit: Thresholds.Limit, store: String, scenario: String) -> String {
        "\(store) × \(scenario): \(limit.metric.name)" + (limit.operation.map { " (\($0.rawValue))" } ?? "")
    }

    func boundText(_ limit: Thresholds.Limit) -> String {
        switch limit.bound {
        case .max(let value): "≤ \(Self.format(value))"
        case .min(let value): "≥ \(Self.format(value))"
        case .maxRatio(let value, _): "≤ \(Self.format(value))×"
        case .minRatio(let value, _): "≥ \(Self.format(value))×"
        }
    }

    public static func format(_ value: Double) -> String { NumberText.compact(value) }

    // MARK: Reports

    /// Passing invariant checks folded into one row, then every other check.
    static func shown(_ outcomes: [CheckOutcome]) -> [CheckOutcome] {
        let heldInvariants = outcomes.filter { $0.source == "invariants" && $0.passed }
        var shown = outcomes.filter { !($0.source == "invariants" && $0.passed) }
        if !heldInvariants.isEmpty {
            shown.insert(
                CheckOutcome(
                    check: "invariants, \(heldInvariants.count) store × scenario runs", limit: "all hold",
                    measured: "all held", passed: true, source: "invariants"),
                at: 0)
        }
        return shown
    }

    /// Passing invariant checks fold into one row; everything else gets a row of its own.
    public static func table(_ outcomes: [CheckOutcome]) -> String {
        let rows =
            [["check", "limit", "measured", "result"]]
            + shown(outcomes).map { [$0.check, $0.limit, $0.measured, $0.passed ? "pass" : "FAIL"] }
        let failed = outcomes.filter { !$0.passed }
        var text = Format.aligned(rows) + "\n"
        text +=
            failed.isEmpty
            ? "all \(outcomes.count) checks passed\n"
            : "\(failed.count) of \(outcomes.count) checks failed:\n"
                + failed.map { "  \($0.check): \($0.measured), limit \($0.limit) [\($0.source)]" }.joined(
                    separator: "\n") + "\n"
        return text
    }
}
