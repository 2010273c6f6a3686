import Foundation

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
