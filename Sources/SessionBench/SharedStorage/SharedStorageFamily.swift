import SessionContract
import SessionMeasurement
import SessionOracle

/// `shared-storage` and `replicas`: several holders of one saved session, in session processes
/// or replica processes through a database (``SharedStorageDriver``).
enum SharedStorageFamily: ScenarioFamily {
    static let kinds: [Scenario.Kind] = [.sharedStorage, .replicas]
    static func requirement(_ kind: Scenario.Kind) -> StoreRequirement? { .sharedStorage }
    static let promise: String? = "shared storage"

    static func notes(ran: Set<Scenario.Kind>) -> [String] {
        var notes: [String] = []
        if ran.contains(.sharedStorage) {
            notes.append(
                "shared-storage's p50/p99 are of the 401 storms' callers, across processes: the wait for the one "
                    + "refresh, the storage's lock and its save included")
        }
        if ran.contains(.replicas) {
            notes.append(
                "replicas' p50/p99 are of the expiries' callers, across replica processes: the wait for the one "
                    + "refresh, the database lock and the save included")
        }
        return notes
    }

    static func judgedInvariants(_ kind: Scenario.Kind) -> [Invariant] {
        [
            .singleFlight, .noHang, .fresh, .staleRejectionDoesNotRefresh, .noReuse, .signOutFence, .served,
            .sessionKept, .restorable, .durableRotation, .signOutDurable,
        ]
    }

    static func summary(_ scenario: Scenario) -> String {
        guard scenario.kind == .replicas else {
            return "2 processes × 2 store instances share one saved session; alternate 401 storms and expiries "
                + "(one run per backend; name:backend picks one)"
        }
        return "\(scenario.replicas ?? Scenario.defaultReplicas) replica processes share one session through a "
            + "database server: 401 storms, expiries, reads, a replica killed holding the lock, one stalled "
            + "holding it (one run per server backend; name:backend picks one)"
    }

    static func headlineOperations(_ kind: Scenario.Kind) -> [OperationKind] {
        kind == .replicas ? [.refreshWait, .rejection, .save] : [.rejection, .refreshWait, .save]
    }

    /// Every event (a 401 storm or an expiry) needs one refresh for the whole session, which its
    /// holder saves for the others.
    static func contradiction(_ result: ScenarioResult, of scenario: Scenario) -> String? {
        if result.storms == 0 { return "no event ran" }
        if result.refreshCalls == 0 {
            return "the server saw no refresh call in \(result.storms) event(s), each of which needs one"
        }
        if result.latencies.first(where: { $0.kind == .save }).map({ $0.count == 0 }) ?? true {
            return "no save in \(result.storms) event(s), though each refresh is saved"
        }
        return nil
    }

    static func run(_ context: DriverContext, outcome: DriverOutcome) async -> ScenarioResult {
        await SessionProcesses.run(context, outcome: outcome) { launcher, backend, outcome in
            await SharedStorageDriver(context: context, launcher: launcher, backend: backend).run(outcome: &outcome)
        }
    }
}
