/// `step-up`'s own CSV columns; empty elsewhere.
extension StepUpFamily {
    static let columns: [CSVColumn] = [
        CSVColumn(
            "prompts", "`step-up`: step-up prompts the simulated user saw over the run; empty elsewhere",
            value: { $0.result.stepUp.map { "\($0.prompts)" } ?? "" }),
        CSVColumn(
            "prompts_per_burst",
            """
            `step-up`: prompts per burst of `tasks` concurrent clinical requests that needed a step-up: `1.00` for \
            a store that prompts once
            """,
            value: { CSVColumn.optional($0.result.stepUp?.promptsPerBurst, 2) }),
        CSVColumn(
            "elevate_calls", "`step-up`: elevation calls the server received",
            value: { $0.result.stepUp.map { "\($0.elevateCalls)" } ?? "" }),
    ]
}
