import Foundation
import SessionMeasurement
import SessionOracle

/// The charts a report's results can draw, each from the figures the tables print and with
/// those figures beside it: latency percentiles per store, refresh calls per expiry,
/// allocations per call, the writer's wait under readers, memory per waiting caller, and for a
/// sweep, throughput against the swept value with the plain-load floor.
extension ResultsReport {
    public func charts() -> [SVGChart] {
        results.contains { $0.sweep != nil } ? sweepCharts() : runCharts()
    }

    /// The percentiles every latency chart marks.
    static let percentiles: [(name: String, value: @Sendable (LatencySummary) -> UInt64)] = [
        ("p50", { $0.p50 }), ("p90", { $0.p90 }), ("p99", { $0.p99 }), ("p99.9", { $0.p999 }),
    ]

    // MARK: One run per store × scenario

    private func runCharts() -> [SVGChart] {
        let view = shown()
        var charts: [SVGChart] = []
        for scenario in view.scenarioNames {
            let block = view.results.filter { $0.scenario == scenario }
            if let chart = Self.latencyChart(scenario, block) { charts.append(chart) }
            if let chart = Self.writerChart(scenario, block) { charts.append(chart) }
            if let chart = Self.refreshChart(scenario, block) { charts.append(chart) }
            if let chart = Self.allocationChart(scenario, block) { charts.append(chart) }
            charts += Self.waiterCharts(scenario, block)
        }
        if let chart = Self.restartChart(view.results) { charts.append(chart) }
        return charts
    }

    /// Runs over storage: of the restarts over a live session, the share after which the session
    /// went on, per store and scenario (backend); the rest ended in the server's revocation.
    static func restartChart(_ results: [ScenarioResult]) -> SVGChart? {
        let rows = results.compactMap { result -> (String, Double, ScenarioResult, PersistenceFigures)? in
            guard let figures = result.persistence, figures.restarts > 0 else { return nil }
            return (
                "\(result.store) · \(result.scenario)", 100 * Double(figures.survived) / Double(figures.restarts),
                result, figures
            )
        }
        guard !rows.isEmpty else { return nil }
        let title = "restarts over a live session the session survived"
        return SVGChart(
            id: "restarts", title: title,
            caption: "Each session process killed at a crash point and started again over the same storage: the "
                + "share of restarts after which the session went on (its first call got a token, no refresh was "
                + "refused). The rest ended when the server refused the restored refresh token as a reuse.",
            svg: ChartDrawing.bars(
                title: title, axis: "% of restarts survived", rows: rows.map { ($0.0, $0.1) },
                format: { String(format: "%.0f%%", $0) }),
            header: [
                "store · scenario", "verdict", "restarts", "survived", "ended by reuse",
                "rotations lost (in flight, before save, mid save)",
            ],
            rows: rows.map { row in
                let lost = ["in-flight", "before-save", "mid-save"].map { String(row.3.rotationsLost[$0] ?? 0) }
                return [
                    row.0, verdictText(row.2), String(row.3.restarts), String(row.3.survived),
                    String(row.3.endedByReuse),
                    lost.joined(separator: ", "),
                ]
            })
    }

    /// The scenario's headline operation's percentiles per store, on a log axis.
    static func latencyChart(_ scenario: String, _ block: [ScenarioResult]) -> SVGChart? {
        let measured = block.compactMap { result in
            result.headlineLatency.flatMap { $0.count > 0 ? (result.store, $0) : nil }
        }
        guard let operation = measured.first?.1.kind else { return nil }
        let title = "\(scenario): \(operation.rawValue) latency per store"
        return dotChart(
            id: "latency-\(scenario)", title: title, rows: measured,
            caption: "Each row is one store; the markers are the \(operation.rawValue) call's median, 90th, 99th and "
                + "99.9th percentile (HdrHistogram, the timer's own cost taken out), on a logarithmic axis. Further "
                + "left is faster.")
    }

    /// `writes-under-reads`: how long each 401 waited behind the readers, async and on OS threads.
    static func writerChart(_ scenario: String, _ block: [ScenarioResult]) -> SVGChart? {
        var rows: [(String, LatencySummary)] = []
        for result in block where result.kind == .steadyReads {
            for latency in result.latencies where latency.count > 0 {
                if latency.kind == .rejection { rows.append(("\(result.store) · under async reads", latency)) }
                if latency.kind == .syncWrite { rows.append(("\(result.store) · under currentToken()", latency)) }
            }
        }
        guard !rows.isEmpty else { return nil }
        return dotChart(
            id: "writer-\(scenario)", title: "\(scenario): each 401's wait under readers", rows: rows,
            caption: "How long the writer's tokenRejected(_:) waited while the readers kept reading: its median, "
                + "90th, 99th and 99.9th percentile per store, on a logarithmic axis. A store that starves its "
                + "writer sits far right.")
    }

    private static func dotChart(id: String, title: String, rows: [(String, LatencySummary)], caption: String)
        -> SVGChart
    {
        let names = percentiles.map(\.name)
        let svg = ChartDrawing.dots(
            title: title, axis: "latency (logarithmic)", points: names,
            rows: rows.map { row in (row.0, percentiles.map { Double($0.value(row.1)) }) },
            format: Format.nanoseconds)
        return SVGChart(
            id: id, title: title, caption: caption, svg: svg,
            header: ["store", "calls timed"] + names + ["max"],
            rows: rows.map { row in
                [row.0, String(row.1.count)] + percentiles.map { Format.nanoseconds(Double($0.value(row.1))) }
                    + [Format.nanoseconds(Double(row.1.max))]
            })
    }

    /// Refresh calls the server received per expiry: 1 is single-flight.
    static func refreshChart(_ scenario: String, _ block: [ScenarioResult]) -> SVGChart? {
        let rows = block.compactMap { result in result.refreshesPerExpiry.map { (result.store, $0, result) } }
        guard !rows.isEmpty else { return nil }
        let title = "\(scenario): refresh calls per expiry"
        let svg = ChartDrawing.bars(
            title: title, axis: "refresh calls the server received per storm",
            rows: rows.map { ($0.0, $0.1) }, format: { String(format: $0 == $0.rounded() ? "%.0f" : "%.2f", $0) },
            reference: (1, "single-flight: 1"))
        return SVGChart(
            id: "refreshes-\(scenario)", title: title,
            caption: "Refresh calls per storm, every caller of a storm asking at once: a single-flight store makes "
                + "exactly one (the dashed line). More than one is a double refresh, which a server that rotates "
                + "refresh tokens answers by revoking the session.",
            svg: svg,
            header: ["store", "storms", "refresh calls in storms", "per expiry", "callers per refresh", "verdict"],
            rows: rows.map { row in
                [
                    row.0, String(row.2.storms), String(row.2.stormRefreshCalls), String(format: "%.2f", row.1),
                    row.2.waitersPerRefresh.map { String(format: "%.1f", $0) } ?? "—", verdictText(row.2),
                ]
            })
    }

    /// Heap allocations per served call, where a counter counted them.
    static func allocationChart(_ scenario: String, _ block: [ScenarioResult]) -> SVGChart? {
        let rows = block.compactMap { result in result.allocationsPerOperation.map { (result.store, $0, result) } }
        guard !rows.isEmpty else { return nil }
        let title = "\(scenario): heap allocations per call"
        let svg = ChartDrawing.bars(
            title: title, axis: "allocations per served call", rows: rows.map { ($0.0, $0.1) },
            format: { String(format: "%.2f", $0) })
        return SVGChart(
            id: "allocations-\(scenario)", title: title,
            caption: "Allocations counted in the measuring process over the measured phase, per call the store "
                + "served (counter: \(rows.first?.2.allocationCounter?.rawValue ?? "none")). 0 is a read that "
                + "allocates nothing.",
            svg: svg, header: ["store", "calls", "allocations", "per call", "bytes per call"],
            rows: rows.map { row in
                [
                    row.0, String(row.2.operations), row.2.allocations.map(String.init) ?? "—",
                    String(format: "%.3f", row.1),
                    row.2.allocatedBytesPerOperation.map { String(format: "%.1f", $0) } ?? "—",
                ]
            })
    }

    /// The scale storm: what each waiting caller costs in the store, beside any caller's own cost.
    static func waiterCharts(_ scenario: String, _ block: [ScenarioResult]) -> [SVGChart] {
        var charts: [SVGChart] = []
        let bytes = block.compactMap { result in result.storeBytesPerWaiter.map { (result.store, $0, result) } }
        if !bytes.isEmpty {
            let title = "\(scenario): heap bytes per waiting caller"
            charts.append(
                SVGChart(
                    id: "bytes-per-waiter-\(scenario)", title: title,
                    caption: "Heap bytes the store holds per caller waiting on one refresh (its waiter entry, its "
                        + "continuation), beyond the caller's own task.",
                    svg: ChartDrawing.bars(
                        title: title, axis: "bytes per waiting caller", rows: bytes.map { ($0.0, $0.1) },
                        format: { String(format: "%.0f", $0) }),
                    header: ["store", "callers", "store bytes per waiter", "caller's own bytes per waiter"],
                    rows: bytes.map { row in
                        [
                            row.0, String(row.2.stormCallers), String(format: "%.1f", row.1),
                            row.2.callerBytesPerWaiter.map { String(format: "%.1f", $0) } ?? "—",
                        ]
                    }))
        }
        let allocations = block.compactMap { result in
            result.storeAllocationsPerWaiter.map { (result.store, $0, result) }
        }
        if !allocations.isEmpty {
            let title = "\(scenario): allocations per waiting caller"
            charts.append(
                SVGChart(
                    id: "allocations-per-waiter-\(scenario)", title: title,
                    caption: "Allocations the store makes per waiting caller (its waiter record, its continuation, "
                        + "its share of the one refresh), beyond what the caller's own task costs.",
                    svg: ChartDrawing.bars(
                        title: title, axis: "allocations per waiting caller", rows: allocations.map { ($0.0, $0.1) },
                        format: { String(format: "%.2f", $0) }),
                    header: ["store", "store allocations per waiter", "caller's own allocations per waiter"],
                    rows: allocations.map { row in
                        [
                            row.0, String(format: "%.3f", row.1),
                            row.2.callerAllocationsPerWaiter.map { String(format: "%.3f", $0) } ?? "—",
                        ]
                    }))
        }
        return charts
    }

    // MARK: A sweep

    private func sweepCharts() -> [SVGChart] {
        guard let parameter = results.compactMap(\.sweep).first?.parameter else { return [] }
        var charts: [SVGChart] = []
        for scenario in scenarioNames {
            let block = results.filter { $0.scenario == scenario && $0.sweep != nil }
            let values = Array(Set(block.compactMap(\.sweep?.value))).sorted()
            let labels = values.map { value in
                block.first { $0.sweep?.value == value }?.sweep?.valueText ?? NumberText.compact(value)
            }
            let stores = block.map(\.store).firstSeen()
            func medians(_ figure: (ScenarioResult) -> Double?) -> [(name: String, values: [Double?])] {
                stores.map { store in
                    (
                        store,
                        values.map { value in
                            let figures = block.filter { $0.store == store && $0.sweep?.value == value }
                                .compactMap(figure)
                            return figures.isEmpty ? nil : Self.median(figures)
                        }
                    )
                }
            }
            func chart(
                id: String, title: String, yAxis: String, caption: String, series: [(name: String, values: [Double?])],
                scale: ChartScale, format: @escaping (Double) -> String
            ) -> SVGChart {
                SVGChart(
                    id: id, title: title, caption: caption,
                    svg: ChartDrawing.lines(
                        title: title, xAxis: parameter.rawValue, yAxis: yAxis, categories: labels, series: series,
                        scale: scale, format: format),
                    header: ["series"] + labels.map { "\(parameter.rawValue)=\($0)" },
                    rows: series.map { item in [item.name] + item.values.map { $0.map(format) ?? "—" } })
            }
            let repeats = Set(block.map { $0.sweep?.repeatIndex ?? 0 }).count
            let median = repeats > 1 ? "the median of \(repeats) repeats" : "one run"
            charts.append(
                chart(
                    id: "throughput-\(scenario)", title: "\(scenario): calls/s against \(parameter.rawValue)",
                    yAxis: "calls/s",
                    caption: "Calls the store served per second, all callers together, at each \(parameter.rawValue) "
                        + "(\(median) per point). Higher is better.",
                    series: medians { $0.operations > 0 ? $0.throughput : nil }, scale: .linear, format: Format.rate))
            if block.contains(where: { $0.syncRead != nil }) {
                var series = medians { $0.syncRead.map(\.throughput) }.filter { $0.values.contains { $0 != nil } }
                series.append(
                    (
                        "plain load (floor)",
                        medians { $0.syncRead?.plainLoadThroughput }.map(\.values).first { $0.contains { $0 != nil } }
                            ?? []
                    ))
                charts.append(
                    chart(
                        id: "sync-read-\(scenario)",
                        title: "\(scenario): currentToken() calls/s against \(parameter.rawValue)", yAxis: "calls/s",
                        caption: "currentToken() on OS threads, all threads together (\(median) per point), beside "
                            + "the floor: the same loop over a token in each thread's own memory, with no "
                            + "synchronization. A store at the floor costs nothing beyond the load.",
                        series: series.filter { !$0.values.isEmpty }, scale: .linear, format: Format.rate))
            }
            let writer = medians { result in
                result.latencies.first { $0.kind == .rejection && $0.count > 0 && result.kind == .steadyReads }
                    .map { Double($0.p99) }
            }
            if block.contains(where: { $0.kind == .steadyReads }),
                writer.contains(where: { $0.values.contains { $0 != nil } }),
                scenario.contains("writes")
            {
                charts.append(
                    chart(
                        id: "writer-p99-\(scenario)",
                        title: "\(scenario): each 401's p99 wait against \(parameter.rawValue)",
                        yAxis: "p99 wait (logarithmic)",
                        caption: "The 99th percentile of the writer's tokenRejected(_:) wait under the async readers "
                            + "(\(median) per point). Lower is better; a store that starves its writer climbs.",
                        series: writer, scale: .logarithmic, format: Format.nanoseconds))
            }
        }
        return charts
    }
}
