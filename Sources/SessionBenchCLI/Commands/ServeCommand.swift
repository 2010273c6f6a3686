import ArgumentParser
import Foundation
import SessionBench
import SessionContract
import SessionOracle
import SessionSync
import TokenServer

/// `session-bench serve`: the token server over HTTP, for a client the tool cannot see inside.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the OAuth token server over HTTP on loopback; print the ledger's verdicts when stopped.",
        discussion: """
            Token endpoint: POST /oauth/token, form-encoded: grant_type=refresh_token (rotating; a used \
            refresh token presented again revokes the session), password, client_credentials; errors as \
            RFC 6749 §5.2.

            Protected resource: GET /resource with a bearer token; an expired, revoked or unknown one gets \
            401 and WWW-Authenticate: Bearer error="invalid_token".

            Discovery: /.well-known/oauth-authorization-server and /.well-known/oauth-protected-resource.

            Admin: GET /admin/verdicts?format=table|csv|json|markdown (the verdicts so far); \
            POST /admin/shutdown with the header X-Session-Bench-Admin: stop (stops, as SIGINT does).

            The first line on standard output is 'listening on http://127.0.0.1:PORT'. On SIGINT, SIGTERM \
            or POST /admin/shutdown the server stops, prints the verdicts (single-flight, no-reuse, \
            no-stale-401-refresh, stops-after-invalid-grant, no-401-loop, one-client-grant-at-a-time) and \
            exits. Tokens and \
            user ids are never printed.

            Exit status: 0 when every verdict passed; 1 when one failed; 2 for bad usage, a port that \
            cannot be had, or a standard output that cannot take the first line.
            """)

    @Option(name: .long, help: "Loopback address to listen on: 127.0.0.1, ::1 or localhost.")
    var host = "127.0.0.1"

    @Option(
        name: .long, help: "Port to listen on, 0 to 65535; 0 picks a free one and prints it.",
        transform: ArgumentText.whole(0...65535))
    var port = 0

    @Option(
        name: .customLong("token-lifetime"),
        help: "How long an access token lives, 1s to 1d (default: 60s).",
        transform: ArgumentText.duration(1...86_400, rangeText: "1s and 1d"))
    var tokenLifetime: DurationArgument?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Token endpoint latency: 20ms (fixed), 5ms-50ms (uniform) or 20ms~0.5 (log-normal median~sigma).",
            discussion: "Default: answers at once. Draws are seeded by --seed."),
        transform: LatencyText.parse)
    var latency: LatencyModel?

    @Option(
        name: .customLong("transient-rate"), help: "Fraction of refreshes answered 503, 0 to 1.",
        transform: ArgumentText.decimal(0...1, unit: "a fraction"))
    var transientRate = 0.0

    @Option(
        name: .customLong("timeout-rate"),
        help: "Fraction of refreshes answered 504 after --timeout-after, the server doing nothing, 0 to 1.",
        transform: ArgumentText.decimal(0...1, unit: "a fraction"))
    var timeoutRate = 0.0

    @Option(
        name: .customLong("lost-response-rate"),
        help: "Fraction of refreshes that rotate the token but answer 504, 0 to 1.",
        transform: ArgumentText.decimal(0...1, unit: "a fraction"))
    var lostResponseRate = 0.0

    @Option(
        name: .customLong("timeout-after"), help: "How long a timed-out refresh waits, 1ms to 1h (default: 50ms).",
        transform: ArgumentText.duration(0.001...3600, rangeText: "1ms and 1h"))
    var timeoutAfter: DurationArgument?

    @Option(
        name: .customLong("reuse-grace"),
        help: "How long a used refresh token may come back without revoking the session, 0s to 1h (default: 0s).",
        transform: ArgumentText.duration(0...3600, rangeText: "0s and 1h"))
    var reuseGrace: DurationArgument?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Seed for latencies and faults, 0 to 2^64-1 (default: 1); given, it seeds the tokens too.",
            discussion: """
                Without --seed, tokens come from the system's CSPRNG: no other process can guess them. With it, \
                the same seed issues the same tokens, for a reproducible session; any process that knows the \
                seed can then redeem a client's refresh token.
                """),
        transform: ArgumentText.seed)
    var seed: UInt64?

    @Option(
        name: .customLong("idle-timeout"),
        help: "Seconds a connection may go without a whole request before it is closed, 0.1 to 3600.",
        transform: ArgumentText.decimal(0.1...3600, unit: "seconds"))
    var idleTimeout = 10.0

    /// What `serve` writes its verdicts as.
    enum VerdictFormat: String, ExpressibleByArgument, CaseIterable {
        case table, csv, json, markdown
    }

    @Option(name: .long, help: "Verdict format: table, csv, json or markdown.")
    var format: VerdictFormat = .table

    @Option(
        name: .long,
        help: "Also write the verdicts to this file (.csv, .json, .md by extension; - for standard output).")
    var output: [String] = []

    @Flag(name: .long, help: "No lines on standard error.")
    var quiet = false

    func validate() throws {
        guard LoopbackHTTP.isLoopback(host) else {
            throw UsageError(
                "--host '\(Printable.name(host))': serve listens on loopback only; give 127.0.0.1, ::1 or localhost")
        }
        let rates = [transientRate, timeoutRate, lostResponseRate]
        guard rates.reduce(0, +) <= 1 else {
            throw UsageError("--transient-rate, --timeout-rate and --lost-response-rate must sum to at most 1")
        }
        _ = try targets()
    }

    /// Every `--output` with the format it is written in.
    private func targets() throws(UsageError) -> [(target: OutputTarget, format: VerdictFormat)] {
        var options = OutputOptions()
        options.format = OutputOptions.Format(rawValue: format.rawValue) ?? .table
        // serve writes no JUnit: a .xml file gets --format, as any other extension would.
        options.output = output.map { path in
            OutputOptions.split(path).0 == nil && path.lowercased().hasSuffix(".xml")
                ? "\(format.rawValue):\(path)" : path
        }
        return try options.destinations().map { destination throws(UsageError) in
            guard let format = VerdictFormat(rawValue: destination.format.rawValue) else {
                throw UsageError(
                    "--output '\(Printable.name(destination.target.path))': serve writes its verdicts as table, csv, "
                        + "json or markdown, not \(destination.format.rawValue)")
            }
            return (destination.target, format)
        }
    }

    mutating func run() async throws {
        let http = try HTTPAvailability.required("serve")
        let server = TokenServer(
            configuration: .init(
                tokenLifetime: tokenLifetime?.duration ?? .seconds(60), reuseGraceWindow: reuseGrace?.duration ?? .zero,
                latency: latency ?? .none,
                faults: FaultModel(
                    transientFailureRate: transientRate, timeoutRate: timeoutRate,
                    timeoutAfter: timeoutAfter?.duration ?? .milliseconds(50), lostResponseRate: lostResponseRate),
                seed: seed ?? 1, tokenBytes: seed == nil ? .system : .seeded),
            clock: .system)
        let stop = StopSignal()
        // The first signal stops serving, within a grace for requests in flight; a second cuts
        // the grace short; both end with the verdicts. A third ends the process as usual.
        let hurry = StopSignal()
        ProcessGuard.onStop {
            stop.fire()
            ProcessGuard.onStop { hurry.fire() }
        }
        let running: LoopbackHTTP.Running
        do {
            running = try await http.serve(
                server, host, port, DurationText.duration(seconds: idleTimeout), { stop.fire() })
        } catch {
            throw UsageError("serve: \(error)")
        }
        let address = host.contains(":") ? "[\(host)]" : host
        // Unbuffered: a script waiting for the port reads it at once. Standard output that
        // cannot take the line (closed, a full disk, a pipe no one reads) is bad usage: no
        // client could learn the port.
        do throws(UsageError) {
            try OutputWriter.show("listening on http://\(address):\(running.port)\n")
        } catch {
            await running.stop()
            throw UsageError("serve did not start: \(error.description)")
        }
        if !quiet {
            Log.progress(
                "session-bench serve: token endpoint POST /oauth/token, resource GET /resource, "
                    + "verdicts GET /admin/verdicts; stop with Ctrl-C, SIGTERM or POST /admin/shutdown")
        }
        if let seed, !quiet {
            Log.progress(
                "note: --seed \(seed) makes the tokens reproducible: any process that knows the seed can redeem "
                    + "them; leave --seed out for tokens from the system's CSPRNG")
        }
        await stop.wait()
        await firstToFinish([{ await running.stop() }, { await hurry.wait() }])
        let verdicts = LedgerVerdicts(ledger: server.ledger, tokenLifetime: server.configuration.tokenLifetime)
        try emit(verdicts)
        if !verdicts.passed { throw ExitCode(ExitStatus.failed.rawValue) }
    }

    private func emit(_ verdicts: LedgerVerdicts) throws {
        func render(_ format: VerdictFormat) throws -> String {
            switch format {
            case .table: verdicts.table()
            case .csv: verdicts.csv()
            case .json: try verdicts.json()
            case .markdown: verdicts.markdown()
            }
        }
        let targets = try targets()
        var outputs: [(target: OutputTarget, text: String)] = []
        for (target, format) in targets {
            outputs.append((target, try render(format)))
        }
        if !targets.contains(where: { $0.target.kind == .standardOutput }) {
            outputs.append((OutputWriter.standardOutput, try render(targets.isEmpty ? format : .table)))
        }
        do {
            try OutputWriter.write(outputs)
        } catch {
            // A serve session cannot be run again: the one line that says no output was written
            // still carries the verdicts' summary (counts only, never a token).
            let failed = verdicts.checks.filter { !$0.passed }.map(\.name)
            throw UsageError(
                error.description + "; verdict: "
                    + (verdicts.passed ? "PASS" : "FAIL (\(failed.joined(separator: ", ")))"))
        }
    }
}

/// A one-shot event: the first of a signal, an admin request or anything else that stops `serve`.
final class StopSignal: Sendable {
    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() { (stream, continuation) = AsyncStream.makeStream() }

    func fire() { continuation.finish() }

    func wait() async { for await _ in stream {} }
}

/// `--latency` for `serve`.
enum LatencyText {
    static let help = "give 20ms (fixed), 5ms-50ms (uniform) or 20ms~0.5 (log-normal median~sigma)"

    @Sendable static func parse(_ text: String) throws -> LatencyModel {
        struct Invalid: Error, CustomStringConvertible { let description: String }
        func duration(_ part: Substring) throws -> Duration {
            guard let seconds = DurationText.seconds(String(part)), (0...60).contains(seconds) else {
                throw Invalid(
                    description: "'\(Printable.name(String(part)))' is not a duration between 0s and 60s; \(help)")
            }
            return DurationText.duration(seconds: seconds)
        }
        if let tilde = text.firstIndex(of: "~") {
            guard let sigma = NumberText.decimal(String(text[text.index(after: tilde)...])), (0...3).contains(sigma)
            else {
                throw Invalid(description: "the log-normal sigma must be a number between 0 and 3; \(help)")
            }
            return .logNormal(median: try duration(text[..<tilde]), sigma: sigma)
        }
        let bounds = text.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        if bounds.count == 2 {
            let low = try duration(bounds[0])
            let high = try duration(bounds[1])
            guard low <= high else { throw Invalid(description: "the lower bound is above the upper; \(help)") }
            return .uniform(low, high)
        }
        let fixed = try duration(Substring(text))
        return fixed == .zero ? .none : .fixed(fixed)
    }
}
