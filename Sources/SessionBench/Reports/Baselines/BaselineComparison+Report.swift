import Foundation

/// The comparison in words: the terminal's block and Markdown's section. Only the changes
/// beyond the noise get a row; the counts say what the rest were.
extension BaselineComparison {
    static let columns = ["store", "scenario", "figure", "baseline", "now", "change", "spread", "p", ""]

    public var heading: String {
        let repeats = changes.first.map { "\($0.baselineRepeats) repeats in the baseline, \($0.currentRepeats) now" }
        return "against baseline \(baseline) (run \(baselineDate)\(repeats.map { ", \($0)" } ?? ""))"
    }

    public var method: String {
        "\(test); α \(InputRange.text(alpha)); a change within ±\(Self.percent(noiseThreshold)), or within "
            + "the spread of either run's repeats (largest − smallest, over the median), is noise"
    }

    var rows: [[String]] {
        (regressions + improvements).map { change in
            [
                change.store, [change.scenario, change.point].compactMap { $0 }.joined(separator: " "), change.metric,
                Self.value(change.baselineMedian, change.unit), Self.value(change.currentMedian, change.unit),
                change.change.map { (($0 >= 0) ? "+" : "") + Self.percent($0) } ?? "from 0",
                Self.percent(change.baselineSpread) + " / " + Self.percent(change.currentSpread),
                String(format: "%.3g", change.p),
                change.verdict == .regression ? "REGRESSION" : "improvement",
            ]
        }
    }

    /// `212 figures: 1 regression, 0 improvements, 3 significant but within the noise, 208 not significant`.
    public var summary: String {
        var parts = [
            "\(count(.regression)) regression\(count(.regression) == 1 ? "" : "s")",
            "\(count(.improvement)) improvement\(count(.improvement) == 1 ? "" : "s")",
            "\(count(.withinNoise)) significant but within the noise",
            "\(count(.notSignificant)) not significant",
        ]
        if count(.untested) > 0 { parts.append("\(count(.untested)) untested (too few repeats)") }
        return "\(changes.count) figures: " + parts.joined(separator: ", ")
    }

    var remarks: [String] {
        var lines: [String] = []
        if !notCompared.isEmpty { lines.append("not compared: " + notCompared.joined(separator: ", ")) }
        if !onlyNow.isEmpty { lines.append("not in the baseline: " + onlyNow.joined(separator: ", ")) }
        if !onlyInBaseline.isEmpty { lines.append("only in the baseline: " + onlyInBaseline.joined(separator: ", ")) }
        return lines + notes
    }

    public func table() -> String {
        var out = "\(heading)\n\(method)\n"
        if !rows.isEmpty { out += Format.aligned([Self.columns] + rows) + "\n" }
        out += summary + "\n"
        out += remarks.map { "note: \($0)\n" }.joined()
        return out
    }

    public func markdown() -> String {
        var out = "### Against baseline \(baseline)\n\n\(heading.prefix(1).uppercased() + heading.dropFirst()).\n"
        out += "\(method).\n\n"
        if !rows.isEmpty {
            out += ResultsReport.markdownTable(
                Array(Self.columns.dropLast()) + ["verdict"],
                rows.map { $0.map { $0.replacingOccurrences(of: "|", with: "\\|") } })
        }
        out += "\(summary).\n\n"
        out += remarks.map { "- \($0)\n" }.joined()
        return out + (remarks.isEmpty ? "" : "\n")
    }

    static func percent(_ fraction: Double) -> String {
        let value = abs(fraction * 100)
        let text =
            value >= 10 || value == value.rounded() ? String(format: "%.0f", value) : String(format: "%.1f", value)
        return (fraction < 0 ? "-" : "") + text + "%"
    }

    static func value(_ value: Double, _ unit: String) -> String {
        switch unit {
        case "ns": Format.nanoseconds(value)
        case "calls/s": Format.rate(value)
        default: String(format: "%.2f", value)
        }
    }
}
