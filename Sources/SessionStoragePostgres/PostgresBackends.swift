#if PostgreSQL
import SessionContract
import SessionStorage

/// The storage backends on a PostgreSQL server, by name: what the `replicas` scenario runs. The
/// server is the one ``PostgresLocation/environmentVariable`` names; each run's session is a row
/// of its own, named after the run's folder.
public enum PostgresBackends {
    /// How long a replica waits for another's refresh before giving up on its own.
    public static let lockTimeout: Duration = .seconds(2)

    public static let all: [StorageBackend] = [
        backend(
            .advisoryLock, name: "postgres-advisory-lock",
            summary: "a row per session; pg_advisory_lock around each refresh, NOTIFY with every new grant"),
        backend(
            .rowLock, name: "postgres-row-lock",
            summary: "a row per session; SELECT … FOR UPDATE around each refresh, committed with the new grant"),
        backend(
            .unlocked, name: "postgres-unlocked",
            summary: "a row per session read before each refresh with no lock: check-then-refresh across replicas",
            isReferenceBroken: true),
        backend(
            .advisoryLockThenProceed, name: "postgres-lock-then-proceed",
            summary: "pg_advisory_lock, but a replica that waits past the timeout refreshes anyway rather than fail",
            isReferenceBroken: true),
    ]

    private static func backend(
        _ coordination: PostgresTokenStorage.Coordination, name: String, summary: String,
        isReferenceBroken: Bool = false
    ) -> StorageBackend {
        StorageBackend(
            name: name, summary: summary, isReferenceBroken: isReferenceBroken, isServer: true,
            lockTimeout: coordination == .unlocked ? nil : lockTimeout,
            discard: { directory in
                guard let location = try? PostgresLocation.fromEnvironment() else { return }
                try? PostgresTokenStorage.remove(session: directory, at: location)
            }
        ) { directory throws(StorageError) in
            let location: PostgresLocation?
            do throws(PostgresLocationError) { location = try PostgresLocation.fromEnvironment() } catch {
                throw .writeFailed(error.description)
            }
            guard let location else {
                throw .writeFailed(
                    "\(name) needs a PostgreSQL server: set \(PostgresLocation.environmentVariable) "
                        + "(scripts/postgres start runs one on loopback and prints its URL)")
            }
            return try PostgresTokenStorage(
                location: location, session: directory, coordination: coordination, lockTimeout: lockTimeout)
        }
    }
}
#endif
