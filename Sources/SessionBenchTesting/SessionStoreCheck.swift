import Foundation
import SessionBench
import SessionContract
import SessionOracle

/// The default `compare`'s scenarios, shortened, run in this process on one store: what a test
/// target calls to fail a test when the store breaks the contract.
///
/// ```swift
/// @Test func storeKeepsTheContract() async {
///     await SessionStoreCheck().expectCorrect(
///         StoreDescriptor(name: "app-store", summary: "the app's store") { AppSessionStore(configuration: $0) })
/// }
/// ```
///
/// Each violation, hang or error becomes one ``SessionStoreFinding``: the invariant's id, the few
/// events that broke it, and the command that runs exactly that scenario and seed again.
/// `SESSION_BENCH_SCENARIOS` (comma-separated) and `SESSION_BENCH_SEED` in the environment replace
/// the scenarios and the seed, which is how that command narrows a test to the failing run.
///
/// Scenarios over storage (`crash-restart`, `shared-storage`) kill and restart session processes,
/// which a test process cannot be: run them with the `session-bench` executable route
/// (`SessionBenchCommand.start(extraStores:)`).
public struct SessionStoreCheck: Sendable {
    /// The scenarios' names, as `compare --scenario` takes them.
    public var scenarios: [String]
    /// Seeds every scenario's server faults, latencies and choices.
    public var seed: UInt64
    /// Rounds of each round-based scenario (the presets run 10 to 40).
    public var rounds: Int
    /// How long each steady scenario runs.
    public var duration: Duration
    /// How long a phase may wait for the store before its callers count as hung.
    public var hangTimeout: Duration
    /// Violations the team knows of, each with its reason: reported as known, not failing; one
    /// that no longer happens is a finding of its own, so the list cannot rot
    /// (`docs/expectations.md`).
    public var expectations: Expectations?
    /// Whether the scenarios were named (here or in the environment) rather than the defaults: a
    /// named one the store does not offer is a finding; a default one is left out.
    private var chosen: Bool

    /// The environment variables that replace ``scenarios`` and ``seed``.
    public static let scenariosVariable = "SESSION_BENCH_SCENARIOS"
    public static let seedVariable = "SESSION_BENCH_SEED"

    /// The default `compare`'s scenarios that run in one process: all but those over storage.
    public static var inProcessDefaults: [String] {
        ScenarioCatalog.defaults.filter { !$0.needsStorage }.map(\.name)
    }

    public init(
        scenarios: [String]? = nil, seed: UInt64 = 1, rounds: Int = 5, duration: Duration = .milliseconds(100),
        hangTimeout: Duration = .seconds(10), expectations: Expectations? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        let named = environment[Self.scenariosVariable].map {
            $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        self.scenarios = named ?? scenarios ?? Self.inProcessDefaults
        chosen = named != nil || scenarios != nil
        self.seed = environment[Self.seedVariable].flatMap { UInt64($0) } ?? seed
        self.rounds = rounds
        self.duration = duration
        self.hangTimeout = hangTimeout
        self.expectations = expectations
    }

    /// Runs every scenario on a fresh `store` each; the results, and what in them fails.
    /// `reproduce` turns a run into the command that repeats it (``command(_:filter:)``).
    ///
    /// A store that blocks every thread of the cooperative pool leaves nothing in this process
    /// able to run again: the finding is written to standard error and the process ends with a
    /// failure, rather than hang the test run.
    public func run(
        _ store: StoreDescriptor, reproduce: @escaping @Sendable (ScenarioResult) -> String
    ) async -> (results: [ScenarioResult], findings: [SessionStoreFinding]) {
        var findings: [SessionStoreFinding] = []
        var presets: [Scenario] = []
        for name in scenarios {
            do throws(ScenarioError) {
                presets += try ScenarioCatalog.resolved(name)
            } catch {
                findings.append(
                    SessionStoreFinding(
                        store: store.name, scenario: name, seed: seed, invariant: nil, summary: error.description,
                        trace: [], reproduce: nil))
            }
        }
        let overrides = ScenarioOverrides(duration: duration, rounds: rounds, seed: seed)
        var runner = ScenarioRunner(hangTimeout: hangTimeout)
        runner.onStarvation = { hung in
            let text = SessionStoreFinding.findings(in: hung, reproduce: reproduce(hung)).map(\.description)
            FileHandle.standardError.write(Data(("session-bench: " + text.joined(separator: "\n") + "\n").utf8))
            _exit(1)
        }
        var results: [ScenarioResult] = []
        for preset in presets {
            // What the store does not offer (step-up, a state stream, storage) it is not run on.
            guard preset.applies(to: store) else {
                if chosen {
                    findings.append(
                        SessionStoreFinding(
                            store: store.name, scenario: preset.name, seed: seed, invariant: nil,
                            summary:
                                "\(store.name) does not declare \(preset.requirement?.declaration ?? "?"), which \(preset.name) runs on",
                            trace: [], reproduce: nil))
                }
                continue
            }
            results.append(await runner.run(store, overrides.applied(to: preset)))
        }
        if results.isEmpty, findings.isEmpty {
            findings.append(
                SessionStoreFinding(
                    store: store.name, scenario: scenarios.joined(separator: ","), seed: seed, invariant: nil,
                    summary: "no scenario ran: none of them applies to \(store.name)", trace: [], reproduce: nil))
        }
        var stale: [Expectations.Stale] = []
        if let expectations { stale = expectations.apply(to: &results) }
        for result in results { findings += SessionStoreFinding.findings(in: result, reproduce: reproduce(result)) }
        for item in stale {
            findings.append(
                SessionStoreFinding(
                    store: store.name, scenario: item.scenarios.joined(separator: ", "), seed: seed,
                    invariant: item.expectation.invariant,
                    summary: Expectations.describe(item, file: expectations?.path ?? "the expectations"), trace: [],
                    reproduce: nil))
        }
        return (results, findings)
    }

    /// The command that runs `result`'s scenario and seed again, alone, in the test `filter`
    /// names (`swift test --filter`).
    public static func command(_ result: ScenarioResult, filter: String?) -> String {
        var words = ["\(scenariosVariable)=\(result.scenario)", "\(seedVariable)=\(result.seed)", "swift", "test"]
        if let filter { words += ["--filter", "'\(filter)'"] }
        return words.joined(separator: " ")
    }
}

/// One thing a ``SessionStoreCheck`` found wrong: a broken invariant, a hang, a run that could
/// not be judged, or a known violation that no longer happens.
public struct SessionStoreFinding: Sendable, Equatable, CustomStringConvertible {
    public var store: String
    public var scenario: String
    public var seed: UInt64
    /// The invariant broken; `nil` for a hang, a crash or a run with no verdict.
    public var invariant: Invariant?
    public var summary: String
    /// The few events that broke it, oldest first.
    public var trace: [String]
    /// The command that runs it again.
    public var reproduce: String?

    public init(
        store: String, scenario: String, seed: UInt64, invariant: Invariant?, summary: String, trace: [String],
        reproduce: String?
    ) {
        self.store = store
        self.scenario = scenario
        self.seed = seed
        self.invariant = invariant
        self.summary = summary
        self.trace = trace
        self.reproduce = reproduce
    }

    /// The finding as a test issue says it: the invariant and what broke it, its events, and how
    /// to run it again.
    public var description: String {
        var lines = [
            "\(invariant.map { "\($0.id) \($0.name)" } ?? "no verdict") — \(store) × \(scenario) (seed \(seed)): \(summary)"
        ]
        lines += trace.map { "  \($0)" }
        if let reproduce { lines.append("reproduce: \(reproduce)") }
        return lines.joined(separator: "\n")
    }

    /// What fails in `result`: each violation not known, or its hang, crash or error.
    static func findings(in result: ScenarioResult, reproduce: String) -> [SessionStoreFinding] {
        let known = Set((result.known ?? []).map(\.invariant))
        var findings = result.violations.filter { !known.contains($0.invariant) }.map { violation in
            SessionStoreFinding(
                store: result.store, scenario: result.scenario, seed: result.seed, invariant: violation.invariant,
                summary: violation.summary + (violation.occurrences > 1 ? " [×\(violation.occurrences)]" : ""),
                trace: violation.trace, reproduce: reproduce)
        }
        let summary: String? =
            switch result.verdict {
            case .hung:
                "hung: " + (result.hang.map { hang in hang.summary + (hang.detail.map { "; \($0)" } ?? "") } ?? "")
            case .crashed: "crashed: " + (result.failure ?? "the store crashed")
            case .error: "no verdict: " + (result.failure ?? "the run ended in an error")
            case .notRun: "not run: " + (result.failure ?? "")
            case .pass, .violated, .known: nil
            }
        if let summary {
            findings.append(
                SessionStoreFinding(
                    store: result.store, scenario: result.scenario, seed: result.seed, invariant: nil, summary: summary,
                    trace: [], reproduce: reproduce))
        }
        return findings
    }
}
