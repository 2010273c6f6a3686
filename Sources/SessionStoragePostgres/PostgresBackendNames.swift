import SessionStorage

/// The names of the backends on a PostgreSQL server, in every build: with the PostgreSQL trait
/// they name ``PostgresBackends``; without it, asking for one says how to get it.
public enum PostgresBackendNames {
    public static let advisoryLock = "postgres-advisory-lock"
    public static let rowLock = "postgres-row-lock"
    public static let unlocked = "postgres-unlocked"
    public static let lockThenProceed = "postgres-lock-then-proceed"

    /// The backends a build without the PostgreSQL trait leaves out.
    public static var leftOut: [StorageBackendCatalog.LeftOut] {
        [advisoryLock, rowLock, unlocked, lockThenProceed].map { .init(name: $0, isServer: true, trait: "PostgreSQL") }
    }
}
