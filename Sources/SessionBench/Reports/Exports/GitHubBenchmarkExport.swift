import Foundation

/// github-action-benchmark's custom format (`tool: customSmallerIsBetter` or
/// `customBiggerIsBetter`): a JSON array of `{name, unit, value, range?, extra?}`, one file per
/// direction. Each store × scenario figure is the median over its repeats; `range` is half the
/// spread between the smallest and largest repeat. A store × scenario with a run that did not
/// pass is left out: its figures measure a failure (the JUnit export reports it).
extension ResultsReport {
    struct GitHubBenchmarkEntry: Encodable {
        var name: String
        var unit: String
        var value: Double
        var range: String?
        var extra: String?
    }

    public func githubBenchmark(_ better: BenchmarkMetric.Better) throws -> String {
        var entries: [GitHubBenchmarkEntry] = []
        for group in BenchmarkGroup.grouping(results) where group.verdict.passes {
            let first = group.runs[0]
            for (metric, values) in group.samples where metric.better == better {
                guard let value = Median.of(values) else { continue }
                let spread = (values.max()! - values.min()!) / 2
                entries.append(
                    GitHubBenchmarkEntry(
                        name: "\(group.key.path) \(metric.name)", unit: metric.unit, value: value,
                        range: values.count > 1 ? "± " + ExportNumber.text(spread) : nil,
                        extra: "\(values.count) repeat\(values.count == 1 ? "" : "s"), \(first.tasks) callers, "
                            + "seed \(first.seed)"))
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(entries), as: UTF8.self) + "\n"
    }
}

enum ExportNumber {
    /// At most three decimals, no exponent: `1234.5`, `0.042`.
    static func text(_ value: Double) -> String {
        var text = String(format: "%.3f", value)
        while text.contains("."), text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }
}
