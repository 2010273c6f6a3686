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

    @Option(
        name: .long,
        help: ArgumentHelp(
            "How stores reach the token server: in-process or http.",
            discussion: """
                http serves each scenario's token server over HTTP on 127.0.0.1 and gives the store an endpoint \
                that calls it with AsyncHTTPClient: real sockets, form bodies and JSON in every refresh. The \
                checks read the same ledger. Scenarios over storage reach the server through their session \
                processes and cannot run over http.
                """))
    var transport: TransportChoice = .inProcess

    static let defaultHangTimeout = 5.0

    func validate() throws {
        _ = try transport.resolved()
    }

    /// `--hang-timeout`, or 5 seconds: read once here, a `Duration` from then on (the measuring
    /// processes get it as one too).
    var hangTimeout: Duration { DurationText.duration(seconds: hangTimeoutOption ?? Self.defaultHangTimeout) }
}
