import SessionContract
import SessionOracle

/// Per store: which lifecycle transitions the run drove, and which promises it could not judge
/// and why.
extension ResultsReport {
    struct CoverageLine {
        let store: String
        let driven: Int
        let of: Int
        let missing: [LifecycleCoverage.Transition]
        let notJudged: [String]
        /// `22 of 33 transitions; not driven: …`.
        let summary: String
    }

    func coverageLines() -> [CoverageLine] {
        results.map(\.store).firstSeen().compactMap { store in
            let runs = results.filter { $0.store == store }
            var coverage = LifecycleCoverage()
            var any = false
            for run in runs {
                guard let other = run.coverage else { continue }
                coverage.merge(other)
                any = true
            }
            guard any else { return nil }
            let offers = runs.compactMap(\.offers).first ?? []
            let (expected, missing) = coverage.missing(synchronousRead: offers.contains(.synchronousRead))
            let ran = Set(runs.map(\.kind))
            var notJudged: [String] = []
            func promise(_ offer: StoreOffers, _ what: String, _ kinds: [Scenario.Kind], _ scenario: String) {
                if !offers.contains(offer) {
                    notJudged.append("\(what): not offered")
                } else if !kinds.contains(where: ran.contains) {
                    notJudged.append("\(what): offered, not run here (--scenario \(scenario))")
                }
            }
            if !offers.contains(.synchronousRead) { notJudged.append("currentToken(): no synchronous read") }
            let refused = runs.reduce(0) { $0 + ($1.refusedByStoreLimit ?? 0) }
            if refused > 0 {
                notJudged.append(
                    "\(refused) call(s) the store refused on its own right after sending three refreshes or more in 30 s of real "
                        + "time: a refresh rate limit on real time, tripped by the rounds' compressed time (--pace 6s spaces them)"
                )
            }
            for family in ScenarioFamilies.all {
                guard let what = family.promise, let kind = family.kinds.first,
                    let requirement = family.requirement(kind)
                else { continue }
                promise(requirement.offer, what, family.kinds, kind.rawValue)
            }
            return CoverageLine(
                store: store, driven: expected - missing.count, of: expected, missing: missing,
                notJudged: notJudged, summary: coverage.summary(synchronousRead: offers.contains(.synchronousRead)))
        }
    }

    /// The coverage block of the terminal table and Markdown.
    func coverage(markdown: Bool) -> String {
        let lines = coverageLines()
        guard !lines.isEmpty else { return "" }
        var out =
            markdown
            ? "### Coverage\n\n" : "coverage (lifecycle transitions the scenarios drove; promises not judged):\n"
        for line in lines {
            var text = "\(line.store): \(line.summary)"
            if !line.notJudged.isEmpty { text += "; not judged: " + line.notJudged.joined(separator: "; ") }
            out += (markdown ? "- " : "  ") + text + "\n"
        }
        return out + (markdown ? "\n" : "")
    }
}
