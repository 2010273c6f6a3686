import Foundation

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
