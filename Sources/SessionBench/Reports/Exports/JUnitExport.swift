import Foundation
import SessionOracle

/// JUnit XML (the Ant/Surefire form CI test reports read; it validates against Jenkins'
/// `junit-10.xsd`): a test suite per store, a test case per scenario × invariant the scenario
/// judges (`Scenario.Kind.judgedInvariants`, plus any it saw violated), so a CI report names
/// `I1 single-flight` directly. Over repeats a case fails if any repeat violated it.
///
/// - A violation is a `failure` whose message is the first violation's summary and whose
///   text is its trace; a hang is a failure of I3; a violation the expectations file names is
///   `skipped`, its message the summary and the reason.
/// - A store that crashed or could not run, in any repeat, is an `error` on every case it did not
///   fail; one that never ran its scenario in any repeat is `skipped`.
extension ResultsReport {
    public func junit() -> String {
        var suites: [String] = []
        var totals = (tests: 0, failures: 0, errors: 0, skipped: 0, time: 0.0)
        for store in results.map(\.store).firstSeen() {
            var cases: [String] = []
            var counts = (failures: 0, errors: 0, skipped: 0)
            let groups = BenchmarkGroup.grouping(results.filter { $0.store == store })
            for group in groups {
                for (invariant, outcome) in Self.junitOutcomes(group) {
                    let classname = XML.attribute(
                        "\(store).\(group.key.scenario)" + (group.key.point.map { ".\($0)" } ?? ""))
                    var element = "    <testcase classname=\"\(classname)\" name=\"\(XML.attribute(invariant.description))\""
                    switch outcome {
                    case .passed:
                        element += "/>"
                    case .failed(let message, let detail):
                        counts.failures += 1
                        element += ">\n      <failure type=\"\(invariant.id)\" message=\"\(XML.attribute(message))\">"
                            + XML.text(detail) + "</failure>\n    </testcase>"
                    case .errored(let message):
                        counts.errors += 1
                        element += ">\n      <error type=\"run\" message=\"\(XML.attribute(message))\"/>\n    </testcase>"
                    case .skipped(let message):
                        counts.skipped += 1
                        element += ">\n      <skipped message=\"\(XML.attribute(message))\"/>\n    </testcase>"
                    }
                    cases.append(element)
                }
            }
            let time = results.filter { $0.store == store }.map(\.seconds).reduce(0, +)
            suites.append(
                "  <testsuite name=\"\(XML.attribute(store))\" tests=\"\(cases.count)\" failures=\"\(counts.failures)\" "
                    + "errors=\"\(counts.errors)\" skipped=\"\(counts.skipped)\" time=\"\(String(format: "%.3f", time))\" "
                    + "timestamp=\"\(XML.attribute(String(metadata.date.prefix(19))))\">\n"
                    + cases.joined(separator: "\n") + "\n  </testsuite>")
            totals.tests += cases.count
            totals.failures += counts.failures
            totals.errors += counts.errors
            totals.skipped += counts.skipped
            totals.time += time
        }
        return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            + "<testsuites name=\"\(XML.attribute(metadata.tool + " " + metadata.command))\" tests=\"\(totals.tests)\" "
            + "failures=\"\(totals.failures)\" errors=\"\(totals.errors)\" time=\"\(String(format: "%.3f", totals.time))\">\n"
            + suites.map { $0 + "\n" }.joined() + "</testsuites>\n"
    }

    enum JUnitOutcome: Equatable {
        case passed
        case failed(message: String, detail: String)
        case errored(String)
        case skipped(String)
    }

    /// Each invariant's outcome over a store × scenario's repeats.
    static func junitOutcomes(_ group: BenchmarkGroup) -> [(Invariant, JUnitOutcome)] {
        let runs = group.runs
        var invariants = runs[0].kind.judgedInvariants
        for violation in runs.flatMap(\.violations) where !invariants.contains(violation.invariant) {
            invariants.append(violation.invariant)
        }
        let completed = runs.filter { $0.verdict == .pass || $0.verdict == .violated || $0.verdict == .known }
        let of = runs.count > 1 ? " in \(runs.count) repeats" : ""
        return invariants.sorted { $0.rawValue < $1.rawValue }.map { invariant in
            let isKnown = { (run: ScenarioResult) in (run.known ?? []).contains { $0.invariant == invariant } }
            let violating = runs.filter { run in run.violations.contains { $0.invariant == invariant } && !isKnown(run) }
            if violating.isEmpty, let expected = runs.lazy.compactMap({ $0.known?.first { $0.invariant == invariant } }).first {
                return (invariant, .skipped("known: \(expected.summary) (expected: \(expected.reason))"))
            }
            if let first = violating.first, let violation = first.violations.first(where: { $0.invariant == invariant }) {
                let times = runs.count > 1 ? " (violated in \(violating.count) of \(runs.count) repeats)" : ""
                return (
                    invariant,
                    .failed(
                        message: violation.summary + times,
                        detail: ([violation.summary] + violation.trace).joined(separator: "\n"))
                )
            }
            if invariant == .noHang, let hung = runs.first(where: { $0.hang != nil }), let hang = hung.hang {
                let message = hang.summary
                return (invariant, .failed(message: message, detail: [message, hang.detail].compactMap { $0 }.joined(separator: "\n")))
            }
            let broken = runs.filter { $0.verdict == .crashed || $0.verdict == .error }
            if let first = broken.first {
                let times = runs.count > 1 ? " in \(broken.count) of \(runs.count) repeats" : ""
                return (invariant, .errored("\(first.verdict.rawValue)\(times): \(first.failure ?? "no detail")"))
            }
            if !completed.isEmpty { return (invariant, .passed) }
            let reason = runs.contains { $0.verdict == .hung } ? "not judged: the store hung" : "not run"
            return (invariant, .skipped(reason + of))
        }
    }
}

/// Escaping for XML 1.0: markup characters as entities, and characters XML 1.0 cannot hold
/// (most control characters) as U+FFFD.
enum XML {
    static func text(_ value: String) -> String {
        var out = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\t", "\n", "\r": out.unicodeScalars.append(scalar)
            case _ where scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF: out += "\u{FFFD}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// For an attribute in double quotes; newlines and tabs as character references, which an
    /// attribute's value normalization would otherwise turn into spaces.
    static func attribute(_ value: String) -> String {
        text(value).replacingOccurrences(of: "\"", with: "&quot;").replacingOccurrences(of: "\n", with: "&#10;")
            .replacingOccurrences(of: "\r", with: "&#13;").replacingOccurrences(of: "\t", with: "&#9;")
    }
}
