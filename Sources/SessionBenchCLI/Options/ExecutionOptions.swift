import ArgumentParser
import SessionBench

/// How the stores run and what is said while they do: the same three options for every
/// command that runs stores (`compare`, `stress`, `sweep`, `check`).
struct ExecutionOptions: ParsableArguments {
    @Option(
        name: .customLong("hang-timeout"),
        help: "Seconds a call may take before the store counts as hung, 0.5 to 3600 (default: 5).",
        transform: ArgumentText.decimal(InputRange.hangTimeoutSeconds, unit: "seconds"))
    var hangTimeoutOption: Double?

    @Flag(
        name: .long,
        help: "Run every store in this process (no crash isolation; allocations are counted in this process).")
    var inProcess = false

    @Flag(name: .long, help: "No progress lines on standard error.")
    var quiet = false

    static let defaultHangTimeout = 5.0

    /// `--hang-timeout`, or 5 seconds.
    var hangTimeout: Double { hangTimeoutOption ?? Self.defaultHangTimeout }
}
