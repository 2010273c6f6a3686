import Foundation

/// A chart the tool draws itself as SVG: no script, no font file, nothing fetched. Every chart
/// carries the table it was drawn from, so a reader who cannot see it (a screen reader, a
/// grayscale print, a copy into a spreadsheet) has every figure.
///
/// Series and markers differ in shape and dash as well as in shade, and values are written
/// beside the marks, so nothing depends on colour.
public struct SVGChart: Sendable {
    /// A name fit for a file: `latency-steady-reads`.
    public let id: String
    public let title: String
    /// What it shows and how to read it, in a sentence.
    public let caption: String
    /// The `<svg>` element alone, to be placed inline in a page.
    public let svg: String
    public let header: [String]
    public let rows: [[String]]

    /// The chart as a file of its own (`results/charts/ID.svg`).
    public init(id: String, title: String, caption: String, svg: String, header: [String], rows: [[String]]) {
        self.id = HTMLPage.anchor(id, taken: [])
        self.title = title
        self.caption = caption
        self.svg = svg
        self.header = header
        self.rows = rows
    }

    public var standalone: String {
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            + svg.replacingOccurrences(
                of: "<svg ", with: "<svg xmlns=\"http://www.w3.org/2000/svg\" ", options: [], range: nil) + "\n"
    }
}

/// How the value axis is laid out.
enum ChartScale {
    case linear
    /// Powers of ten; values at or below zero are left off.
    case logarithmic

    /// The axis's ends, widened to round numbers, and its ticks.
    func axis(_ values: [Double], includeZero: Bool = true) -> (low: Double, high: Double, ticks: [Double]) {
        switch self {
        case .linear:
            let high = max(values.max() ?? 1, includeZero ? 0 : -Double.infinity)
            let low = includeZero ? min(0, values.min() ?? 0) : (values.min() ?? 0)
            guard high > low else { return (low, low + 1, [low, low + 1]) }
            let step = Self.niceStep((high - low) / 5)
            let top = (high / step).rounded(.up) * step
            let bottom = (low / step).rounded(.down) * step
            let ticks = stride(from: bottom, through: top + step / 2, by: step).map { $0 }
            return (bottom, top, ticks)
        case .logarithmic:
            let positive = values.filter { $0 > 0 }
            let low = pow(10, (log10(positive.min() ?? 1)).rounded(.down))
            var high = pow(10, (log10(positive.max() ?? 10)).rounded(.up))
            if high <= low { high = low * 10 }
            var ticks: [Double] = []
            var tick = low
            while tick <= high * 1.0001 {
                ticks.append(tick)
                tick *= 10
            }
            return (low, high, ticks)
        }
    }

    /// Where `value` falls between `low` (0) and `high` (1).
    func fraction(_ value: Double, low: Double, high: Double) -> Double {
        switch self {
        case .linear: return (value - low) / (high - low)
        case .logarithmic:
            guard value > 0 else { return 0 }
            return (log10(value) - log10(low)) / (log10(high) - log10(low))
        }
    }

    /// 1, 2 or 5 times a power of ten, the nearest at or above `rough`.
    static func niceStep(_ rough: Double) -> Double {
        guard rough > 0, rough.isFinite else { return 1 }
        let power = pow(10, log10(rough).rounded(.down))
        for factor in [1.0, 2, 5, 10] where factor * power >= rough { return factor * power }
        return 10 * power
    }
}
