import SessionContract
import SessionStorage

/// `crash-restart`: a session process per round over one storage, killed at seeded crash points
/// and started again (``CrashRestartDriver``).
enum CrashRestartFamily: ScenarioFamily {
    static let kinds: [Scenario.Kind] = [.crashRestart]

    static func judgedInvariants(_ kind: Scenario.Kind) -> [Invariant] {
        [1, 2, 3, 7, 14, 15, 16, 17].compactMap(Invariant.init(rawValue:))
    }

    static func summary(_ scenario: Scenario) -> String {
        "a session process per round over one storage, killed at seeded crash points and restarted "
            + "(one run per backend; name:backend picks one)"
    }

    static func headlineOperations(_ kind: Scenario.Kind) -> [OperationKind] { [.save] }

    static func run(_ context: DriverContext, outcome: DriverOutcome) async -> ScenarioResult {
        await SessionProcesses.run(context, outcome: outcome) { launcher, backend, outcome in
            await CrashRestartDriver(context: context, launcher: launcher, backend: backend).run(outcome: &outcome)
        }
    }
}

/// The families whose scenarios start session processes over a storage backend.
enum SessionProcesses {
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
