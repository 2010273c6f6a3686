extension ThresholdCheck {
    /// The gate's checks as an HTML report's first section, above the run's own charts and tables.
    public static func html(_ outcomes: [CheckOutcome], results: [ScenarioResult], file: String) -> String {
        let rows = shown(outcomes)
        let failed = outcomes.count { !$0.passed }
        let report = ResultsReport(results: results, metadata: .current(command: "check --thresholds \(file)"))
        return report.html(
            title: "session-bench check",
            extra: { page in
                page.heading("Checks", id: "checks")
                page.paragraph(
                    failed == 0
                        ? "All \(outcomes.count) checks passed." : "\(failed) of \(outcomes.count) checks failed.")
                page.table(
                    ["check", "limit", "measured", "result", "from"],
                    rows.map { [$0.check, $0.limit, $0.measured, $0.passed ? "pass" : "FAIL", $0.source] })
            })
    }
}
