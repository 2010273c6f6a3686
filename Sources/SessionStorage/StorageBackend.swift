import SessionContract

/// A named way to keep a session on disk, as the harness and the command line list them; the
/// storage counterpart of `StoreDescriptor`.
///
/// Each ``make(directory:)`` is given a fresh folder that the backend owns outright, so every
/// byte under it is the backend's doing: an at-rest check may scan all of them.
public struct StorageBackend: Sendable, Hashable, CustomStringConvertible {
    /// A short, stable, command-line-friendly name (`json-file`, `encrypted-file`).
    public let name: String
    /// One line saying how the backend keeps the session.
    public let summary: String
    /// Marks a backend that is wrong on purpose, kept as a reference the checks must catch.
    /// Such backends are left out of "all backends" unless asked for.
    public let isReferenceBroken: Bool
    /// Whether the backend promises that no token or user-id bytes are in clear anywhere under its
    /// folder and that its files are readable by their owner only; the at-rest check holds it to
    /// that. A reference-broken backend may claim it falsely: that is what the check must catch.
    public let protectsAtRest: Bool
    /// Whether the session lives on a database server rather than in the folder, so replicas on
    /// any machine share it: the backends the `replicas` scenario runs (and the only ones it
    /// runs). Such a backend uses the folder's path only to name its session.
    public let isServer: Bool
    /// How long a holder waits for its turn to refresh before giving up, for a backend whose
    /// lock has a timeout: the longest a holder that died with the lock may hold the others up.
    public let lockTimeout: Duration?
    private let factory: @Sendable (String) throws(StorageError) -> any TokenStorage

    public init(
        name: String, summary: String, isReferenceBroken: Bool = false, protectsAtRest: Bool = false,
        isServer: Bool = false, lockTimeout: Duration? = nil,
        discard: (@Sendable (String) -> Void)? = nil,
        removeAbandoned: (@Sendable (_ isGone: @Sendable (String) -> Bool) -> Int?)? = nil,
        make: @escaping @Sendable (String) throws(StorageError) -> any TokenStorage
    ) {
        discarder = discard
        sweeper = removeAbandoned
        self.name = name
        self.summary = summary
        self.isReferenceBroken = isReferenceBroken
        self.protectsAtRest = protectsAtRest
        self.isServer = isServer
        self.lockTimeout = lockTimeout
        self.factory = make
    }

    /// A storage keeping its session under `directory`, a fresh folder the backend owns (created
    /// if missing). Storages made on the same folder share the saved session, as a restarted
    /// process would.
    public func make(directory: String) throws(StorageError) -> any TokenStorage {
        try factory(directory)
    }

    /// Removes what the backend keeps for `directory`'s session outside the folder (a database
    /// row), at the end of a run; the folder itself is the caller's to remove. Best effort.
    public func discard(directory: String) { discarder?(directory) }

    private let discarder: (@Sendable (String) -> Void)?

    /// Removes what runs that are gone left outside their folders (database rows that a run
    /// killed, or one that lost its database, could not remove): every session whose folder
    /// `isGone` says belonged to a run that has ended. Returns how many were removed; `nil` when
    /// the backend keeps nothing outside the folder or its server cannot be reached.
    public func removeAbandoned(where isGone: @Sendable (String) -> Bool) -> Int? { sweeper?(isGone) }

    private let sweeper: (@Sendable (_ isGone: @Sendable (String) -> Bool) -> Int?)?

    public var description: String { name }
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.name == rhs.name }
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
}
