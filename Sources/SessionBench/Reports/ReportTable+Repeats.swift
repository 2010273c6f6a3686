import SessionMeasurement

/// With `compare --repeats`, the tables show one run per store × scenario; the CSV and JSON
/// keep every repeat.
extension ResultsReport {
    /// The runs the tables show: every run, or with `compare --repeats` one per store ×
    /// scenario — the first repeat that did not pass, else the first whose violations were all
    /// known, else the one with the median p50.
    func shown() -> ResultsReport {
        guard results.contains(where: { $0.repeatIndex != nil }) else { return self }
        var view = self
        view.results = BenchmarkGroup.grouping(results).map { group in
            if let failed = group.runs.first(where: { !$0.verdict.passes }) { return failed }
            if let known = group.runs.first(where: { $0.verdict == .known }) { return known }
            let sorted = group.runs.sorted { ($0.headlineLatency?.p50 ?? 0) < ($1.headlineLatency?.p50 ?? 0) }
            return sorted[(sorted.count - 1) / 2]
        }
        return view
    }

    func repeatNotes() -> [String] {
        let repeats = Set(results.compactMap(\.repeatIndex)).count
        guard repeats > 1 else { return [] }
        return [
            "\(repeats) repeats: each row is the repeat with the median p50 of its store × scenario, or the first "
                + "that did not pass; the CSV and JSON hold every repeat"
        ]
    }
}
