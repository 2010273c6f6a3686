import SessionContract
import SessionMeasurement
import SessionOracle
import SessionStorage

/// `crash-restart`: a session process per round over one storage, killed at seeded crash points
/// and started again (``CrashRestartDriver``).
enum CrashRestartFamily: ScenarioFamily {
    static let kinds: [Scenario.Kind] = [.crashRestart]
    static func requirement(_ kind: Scenario.Kind) -> StoreRequirement? { .savedSession }
    static let promise: String? = "persistence I14–I17"

    static func notes(ran: Set<Scenario.Kind>) -> [String] {
        guard ran.contains(.crashRestart) else { return [] }
        return ["crash-restart's p50/p99 are of the storage's saves (fsync included): what a backend adds to a refresh"]
    }

    static func judgedInvariants(_ kind: Scenario.Kind) -> [Invariant] {
        [.singleFlight, .sameOutcome, .noHang, .noReuse, .restorable, .durableRotation, .signOutDurable, .sealedAtRest]
    }

    static func summary(_ scenario: Scenario) -> String {
        "a session process per round over one storage, killed at seeded crash points and restarted "
            + "(one run per backend; name:backend picks one)"
    }

    static func headlineOperations(_ kind: Scenario.Kind) -> [OperationKind] { [.save] }

    /// Every session process saves (its sign-in, or its storm's grant) and its storm refreshes;
    /// a restart over a live session comes whenever a process but the last ends at a point that
    /// leaves one (every point but the sign-outs): with `--rounds 1` a schedule may have none.
    static func contradiction(_ result: ScenarioResult, of scenario: Scenario) -> String? {
        guard let figures = result.persistence, figures.processes > 0 else { return "no session process ran" }
        let processes = "\(figures.processes) session process(es)"
        if result.latencies.first(where: { $0.kind == .save }).map({ $0.count == 0 }) ?? true {
            return "no save in \(processes)"
        }
        if result.refreshCalls == 0 { return "no storm's refresh reached the server in \(processes)" }
        if figures.restarts == 0, restartsALiveSession(scenario) {
            return "no restart over a live session in \(processes), though the schedule has one"
        }
        return nil
    }

    /// Whether the scenario's schedule restarts a live session: a process but the last (a clean
    /// one closes every schedule) ends at a point that does not sign out.
    static func restartsALiveSession(_ scenario: Scenario) -> Bool {
        var points = CrashPoint.schedule(rounds: scenario.rounds, seed: scenario.seed)
        if points.last != .clean { points.append(.clean) }
        return points.dropLast().contains { !$0.signsOut }
    }

    static func run(_ context: DriverContext, outcome: DriverOutcome) async -> ScenarioResult {
        await SessionProcesses.run(context, outcome: outcome) { launcher, backend, outcome in
            await CrashRestartDriver(context: context, launcher: launcher, backend: backend).run(outcome: &outcome)
        }
    }
}

/// The families whose scenarios start session processes over a storage backend.
enum SessionProcesses {
    /// The run's failure when the database is out of reach.
    static func unreachable(_ why: String) -> String { "database unreachable: \(why)" }

    /// Runs `body` with the runner's launcher and the scenario's backend; without a launcher (a
    /// runner in a test or a user's program) the run ends in `error`, saying why.
    static func run(
        _ context: DriverContext, outcome: DriverOutcome,
        _ body: (any SessionProcessLauncher, StorageBackend, inout DriverOutcome) async -> Void
    ) async -> ScenarioResult {
        var outcome = outcome
        if let launcher = context.runner.sessionProcesses,
            let backend = context.scenario.storage.flatMap(StorageBackendCatalog.named)
        {
            await body(launcher, backend, &outcome)
        } else {
            outcome.failure =
                "\(context.scenario.name) starts session processes: run it through the session-bench command line"
        }
        return outcome.finished()
    }
}
