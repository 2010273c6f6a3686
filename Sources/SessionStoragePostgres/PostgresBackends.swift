#if PostgreSQL
import Foundation
import SessionContract
import SessionStorage

/// The storage backends on a PostgreSQL server, by name: what the `replicas` scenario runs. The
/// server is the one ``PostgresLocation/environmentVariable`` names; each run's session is a row
/// of its own, named after this machine and the run's folder (``sessionKey(for:)``), so that a
/// later run can tell the rows of this machine's runs that are gone from those of runs elsewhere.
public enum PostgresBackends {
    /// How long a replica waits for another's refresh before giving up on its own.
    public static let lockTimeout: Duration = .seconds(2)

    public static let all: [StorageBackend] = [
        backend(
            .advisoryLock, name: PostgresBackendNames.advisoryLock,
            summary: "a row per session; pg_advisory_lock around each refresh, NOTIFY with every new grant"),
        backend(
            .rowLock, name: PostgresBackendNames.rowLock,
            summary: "a row per session; SELECT … FOR UPDATE around each refresh, committed with the new grant"),
        backend(
            .unlocked, name: PostgresBackendNames.unlocked,
            summary: "a row per session read before each refresh with no lock: check-then-refresh across replicas",
            isReferenceBroken: true),
        backend(
            .advisoryLockThenProceed, name: PostgresBackendNames.lockThenProceed,
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
                try? PostgresTokenStorage.remove(session: sessionKey(for: directory), at: location)
            },
            removeAbandoned: { isGone in
                guard let location = try? PostgresLocation.fromEnvironment(),
                    let sessions = try? PostgresTokenStorage.sessions(at: location)
                else { return nil }
                let gone = sessions.filter { directory(of: $0).map(isGone) ?? false }
                guard !gone.isEmpty else { return 0 }
                return (try? PostgresTokenStorage.remove(sessions: gone, at: location)) == nil ? nil : gone.count
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
                location: location, session: sessionKey(for: directory), coordination: coordination,
                lockTimeout: lockTimeout)
        }
    }

    /// The row's name for the session kept for `directory`: `MACHINE:DIRECTORY`, where the machine
    /// is this boot of this computer (Linux's boot id, else the host name). A folder's owner can be
    /// checked only on the machine, and in the boot, it ran in.
    public static func sessionKey(for directory: String) -> String { machine + ":" + directory }

    /// The folder a row of this machine names; `nil` for a row of another machine, or another boot.
    /// A row named by its folder alone (as before rows named their machine) counts as this one's.
    static func directory(of key: String) -> String? {
        if key.hasPrefix("/") { return key }
        return key.hasPrefix(machine + ":") ? String(key.dropFirst(machine.count + 1)) : nil
    }

    static let machine: String = {
        if let boot = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8) {
            let id = boot.trimmingCharacters(in: .whitespacesAndNewlines)
            if !id.isEmpty { return id }
        }
        var name = [CChar](repeating: 0, count: 256)
        return gethostname(&name, name.count) == 0 ? String(cString: name) : "localhost"
    }()
}
#endif
