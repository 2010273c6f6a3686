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

/// The drawing of a chart: SVG elements with coordinates rounded to a tenth of a pixel.
struct SVGCanvas {
    let width: Double
    /// Grows when labels need the room (`lines`' names below the axis).
    var height: Double
    private(set) var body = ""

    init(width: Double, height: Double) {
        self.width = width
        self.height = height
    }

    static func number(_ value: Double) -> String {
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(format: "%.1f", rounded)
    }

    mutating func line(
        _ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, stroke: String, width: Double = 1, dash: String? = nil
    ) {
        let n = Self.number
        body +=
            "<line x1=\"\(n(x1))\" y1=\"\(n(y1))\" x2=\"\(n(x2))\" y2=\"\(n(y2))\" stroke=\"\(stroke)\" stroke-width=\"\(n(width))\""
            + (dash.map { " stroke-dasharray=\"\($0)\"" } ?? "") + "/>"
    }

    mutating func rect(_ x: Double, _ y: Double, _ w: Double, _ h: Double, fill: String, stroke: String? = nil) {
        let n = Self.number
        body +=
            "<rect x=\"\(n(x))\" y=\"\(n(y))\" width=\"\(n(max(0, w)))\" height=\"\(n(max(0, h)))\" fill=\"\(fill)\""
            + (stroke.map { " stroke=\"\($0)\"" } ?? "") + "/>"
    }

    enum Anchor: String { case start, middle, end }

    mutating func text(
        _ x: Double, _ y: Double, _ content: String, anchor: Anchor = .start, size: Double = 11, weight: String? = nil
    ) {
        let n = Self.number
        body +=
            "<text x=\"\(n(x))\" y=\"\(n(y))\" font-size=\"\(n(size))\" text-anchor=\"\(anchor.rawValue)\""
            + (weight.map { " font-weight=\"\($0)\"" } ?? "") + ">\(HTMLText.escape(content))</text>"
    }

    mutating func polyline(_ points: [(Double, Double)], stroke: String, width: Double = 1.5, dash: String? = nil) {
        guard points.count > 1 else { return }
        let n = Self.number
        let list = points.map { "\(n($0.0)),\(n($0.1))" }.joined(separator: " ")
        body +=
            "<polyline points=\"\(list)\" fill=\"none\" stroke=\"\(stroke)\" stroke-width=\"\(n(width))\""
            + (dash.map { " stroke-dasharray=\"\($0)\"" } ?? "") + "/>"
    }

    /// A marker of `shape` centred on (x, y): shapes tell series apart without colour.
    mutating func marker(_ shape: MarkerShape, _ x: Double, _ y: Double, fill: String, size: Double = 4.5) {
        let n = Self.number
        let s = size
        switch shape {
        case .circle:
            body +=
                "<circle cx=\"\(n(x))\" cy=\"\(n(y))\" r=\"\(n(s))\" fill=\"\(fill)\" stroke=\"#000\" stroke-width=\"0.8\"/>"
        case .square:
            rect(x - s, y - s, 2 * s, 2 * s, fill: fill, stroke: "#000")
        case .triangle:
            polygon([(x, y - s * 1.2), (x + s * 1.1, y + s * 0.9), (x - s * 1.1, y + s * 0.9)], fill: fill)
        case .diamond:
            polygon([(x, y - s * 1.3), (x + s * 1.1, y), (x, y + s * 1.3), (x - s * 1.1, y)], fill: fill)
        case .triangleDown:
            polygon([(x, y + s * 1.2), (x + s * 1.1, y - s * 0.9), (x - s * 1.1, y - s * 0.9)], fill: fill)
        case .cross:
            line(x - s, y - s, x + s, y + s, stroke: "#000", width: 2)
            line(x - s, y + s, x + s, y - s, stroke: "#000", width: 2)
        case .plus:
            line(x - s * 1.2, y, x + s * 1.2, y, stroke: "#000", width: 2)
            line(x, y - s * 1.2, x, y + s * 1.2, stroke: "#000", width: 2)
        case .bar:
            rect(x - s * 1.3, y - s * 0.45, 2.6 * s, 0.9 * s, fill: fill, stroke: "#000")
        }
    }

    mutating func polygon(_ points: [(Double, Double)], fill: String) {
        let n = Self.number
        body +=
            "<polygon points=\"\(points.map { "\(n($0.0)),\(n($0.1))" }.joined(separator: " "))\" fill=\"\(fill)\" "
            + "stroke=\"#000\" stroke-width=\"0.8\"/>"
    }

    /// A horizontal value axis under rows from `top` to `bottom`: a grid line and a label per tick,
    /// and the axis's title centred below.
    mutating func valueAxis(
        _ ticks: [Double], at x: (Double) -> Double, top: Double, bottom: Double, title: String, centre: Double,
        format: (Double) -> String
    ) {
        for tick in ticks {
            line(x(tick), top, x(tick), bottom, stroke: "#ddd")
            text(x(tick), bottom + 14, format(tick), anchor: .middle, size: 10)
        }
        text(centre, bottom + 30, title, anchor: .middle, size: 10)
    }

    /// The finished `<svg>`: titled for assistive technology, sized to scale with the page.
    func svg(title: String, description: String) -> String {
        let n = Self.number
        return
            "<svg viewBox=\"0 0 \(n(width)) \(n(height))\" width=\"\(n(width))\" height=\"\(n(height))\" role=\"img\" "
            + "font-family=\"system-ui, -apple-system, 'Segoe UI', sans-serif\" fill=\"#111\">"
            + "<title>\(HTMLText.escape(title))</title><desc>\(HTMLText.escape(description))</desc>"
            + "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>" + body + "</svg>"
    }
}

enum MarkerShape: CaseIterable {
    case circle, square, triangle, diamond, triangleDown, cross, plus, bar
}

/// The look of the n-th series: a shade, a dash and a marker, each distinct on its own.
struct SeriesStyle {
    let shade: String
    let dash: String?
    let marker: MarkerShape

    static func at(_ index: Int) -> SeriesStyle {
        let shades = ["#1f1f1f", "#5a5a5a", "#8c8c8c", "#3a3a3a", "#707070", "#262626", "#a0a0a0", "#4d4d4d"]
        let dashes: [String?] = [nil, "6 3", "2 3", "9 3 2 3", nil, "4 2", "1 2", "12 4"]
        let markers = MarkerShape.allCases
        return SeriesStyle(
            shade: shades[index % shades.count], dash: dashes[index % dashes.count],
            marker: markers[index % markers.count]
        )
    }
}

/// The three kinds of chart the reports draw.
enum ChartDrawing {
    static let labelWidth = 6.4
    /// The most a row label may take; longer ones are cut with an ellipsis (the table has them whole).
    static let labelLimit = 380.0

    /// The space `labels` need, up to ``labelLimit``.
    static func labelSpace(_ labels: [String]) -> Double {
        min(labelLimit, 12 + labelWidth * Double(labels.map(\.count).max() ?? 4))
    }

    /// `label` cut to fit ``labelLimit``.
    static func fitted(_ label: String) -> String {
        let most = Int((labelLimit - 12) / labelWidth)
        return label.count <= most ? label : String(label.prefix(most - 1)) + "…"
    }

    /// Horizontal bars, one per row, each with its value written at its end; `reference` draws a
    /// labelled line across (1 refresh per expiry, the plain-load floor).
    static func bars(
        title: String, axis: String, rows: [(label: String, value: Double?)], scale: ChartScale = .linear,
        format: (Double) -> String, reference: (value: Double, label: String)? = nil
    ) -> String {
        let labelSpace = labelSpace(rows.map(\.label))
        let plot = 420.0
        let rowHeight = 20.0
        let top = reference == nil ? 28.0 : 40.0
        let width = labelSpace + plot + 90
        let height = top + rowHeight * Double(rows.count) + 40
        var canvas = SVGCanvas(width: width, height: height)
        canvas.text(4, 16, title, size: 12, weight: "600")
        let values = rows.compactMap(\.value) + (reference.map { [$0.value] } ?? [])
        let (low, high, ticks) = scale.axis(values)
        let x = { (value: Double) in labelSpace + plot * scale.fraction(value, low: low, high: high) }
        let bottom = top + rowHeight * Double(rows.count)
        canvas.valueAxis(
            ticks, at: x, top: top, bottom: bottom, title: axis, centre: labelSpace + plot / 2, format: format)
        for (index, row) in rows.enumerated() {
            let y = top + rowHeight * Double(index)
            canvas.text(labelSpace - 6, y + 14, fitted(row.label), anchor: .end)
            guard let value = row.value else {
                canvas.text(labelSpace + 4, y + 14, "not measured", size: 10)
                continue
            }
            let start = scale == .logarithmic ? x(low) : x(max(low, 0))
            canvas.rect(start, y + 4, x(value) - start, rowHeight - 8, fill: "#6b6b6b", stroke: "#000")
            canvas.text(max(x(value), start) + 4, y + 14, format(value), size: 10)
        }
        if let reference {
            canvas.line(
                x(reference.value), top - 4, x(reference.value), bottom, stroke: "#000", width: 1.5, dash: "5 3")
            canvas.text(x(reference.value) + 3, top - 6, reference.label, size: 10)
        }
        return canvas.svg(title: title, description: axis)
    }

    /// A row per label and a marker per point on one value axis (latency percentiles per store):
    /// the markers' shapes name the points, so it reads in grayscale.
    static func dots(
        title: String, axis: String, points: [String], rows: [(label: String, values: [Double?])],
        format: (Double) -> String
    ) -> String {
        let labelSpace = labelSpace(rows.map(\.label))
        let plot = 460.0
        let rowHeight = 22.0
        let top = 44.0
        let width = labelSpace + plot + 30
        let height = top + rowHeight * Double(rows.count) + 40
        var canvas = SVGCanvas(width: width, height: height)
        canvas.text(4, 16, title, size: 12, weight: "600")
        var legendX = labelSpace
        for (index, point) in points.enumerated() {
            canvas.marker(SeriesStyle.at(index).marker, legendX + 5, 31, fill: SeriesStyle.at(index).shade)
            canvas.text(legendX + 14, 35, point, size: 10)
            legendX += 24 + labelWidth * Double(point.count)
        }
        let scale = ChartScale.logarithmic
        let (low, high, ticks) = scale.axis(rows.flatMap { $0.values.compactMap { $0 } })
        let x = { (value: Double) in labelSpace + plot * scale.fraction(value, low: low, high: high) }
        let bottom = top + rowHeight * Double(rows.count)
        canvas.valueAxis(
            ticks, at: x, top: top, bottom: bottom, title: axis, centre: labelSpace + plot / 2, format: format)
        for (index, row) in rows.enumerated() {
            let y = top + rowHeight * Double(index) + rowHeight / 2
            canvas.text(labelSpace - 6, y + 4, fitted(row.label), anchor: .end)
            let present = row.values.enumerated().compactMap { item in item.element.map { (item.offset, $0) } }
            if let first = present.first, let last = present.last {
                canvas.line(x(first.1), y, x(last.1), y, stroke: "#999", width: 1)
            }
            for (point, value) in present {
                let style = SeriesStyle.at(point)
                canvas.marker(style.marker, x(value), y, fill: style.shade)
            }
        }
        return canvas.svg(title: title, description: axis)
    }

    /// A line per series over categories on the x axis (a swept parameter's values), each
    /// named at its right end; `dashed` series (a floor) are drawn in dashes.
    static func lines(
        title: String, xAxis: String, yAxis: String, categories: [String],
        series: [(name: String, values: [Double?])], scale: ChartScale = .linear, format: (Double) -> String
    ) -> String {
        let left = 70.0
        let plot = 460.0
        let top = 42.0
        let plotHeight = 280.0
        let nameSpace = 28 + labelWidth * Double(series.map(\.name.count).max() ?? 4)
        let width = left + plot + nameSpace
        let height = top + plotHeight + 46
        var canvas = SVGCanvas(width: width, height: height)
        canvas.text(4, 16, title, size: 12, weight: "600")
        let (low, high, ticks) = scale.axis(series.flatMap { $0.values.compactMap { $0 } })
        let y = { (value: Double) in top + plotHeight * (1 - scale.fraction(value, low: low, high: high)) }
        let step = categories.count > 1 ? plot / Double(categories.count - 1) : 0
        let x = { (index: Int) in categories.count > 1 ? left + step * Double(index) : left + plot / 2 }
        for tick in ticks {
            canvas.line(left, y(tick), left + plot, y(tick), stroke: "#ddd")
            canvas.text(left - 6, y(tick) + 4, format(tick), anchor: .end, size: 10)
        }
        for (index, category) in categories.enumerated() {
            canvas.line(x(index), top + plotHeight, x(index), top + plotHeight + 4, stroke: "#000")
            canvas.text(x(index), top + plotHeight + 16, category, anchor: .middle, size: 10)
        }
        canvas.line(left, top + plotHeight, left + plot, top + plotHeight, stroke: "#000")
        canvas.line(left, top, left, top + plotHeight, stroke: "#000")
        canvas.text(left + plot / 2, top + plotHeight + 34, xAxis, anchor: .middle, size: 10)
        canvas.text(left - 6, top - 12, yAxis, anchor: .end, size: 10)
        // Names at the right end, nudged apart so none overlaps another.
        var ends: [(y: Double, name: String, style: SeriesStyle)] = []
        for (index, item) in series.enumerated() {
            let style = SeriesStyle.at(index)
            let points = item.values.enumerated().compactMap { entry in entry.element.map { (x(entry.offset), y($0)) } }
            canvas.polyline(points, stroke: style.shade, width: 1.8, dash: style.dash)
            for point in points { canvas.marker(style.marker, point.0, point.1, fill: style.shade, size: 3.8) }
            if let last = points.last { ends.append((last.1, item.name, style)) }
        }
        ends.sort { $0.y < $1.y }
        var previous = -Double.infinity
        for end in ends {
            let placed = max(end.y + 4, previous + 12)
            canvas.marker(end.style.marker, left + plot + 12, placed - 4, fill: end.style.shade, size: 3.5)
            canvas.text(left + plot + 20, placed, end.name, size: 10)
            previous = placed
        }
        canvas.height = max(canvas.height, previous + 8)
        return canvas.svg(title: title, description: "\(yAxis) against \(xAxis)")
    }
}
