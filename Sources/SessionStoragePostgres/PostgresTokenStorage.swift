#if PostgreSQL
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import SessionContract
import SessionStorage
import SessionSync
import Synchronization

/// A session kept in one row of a PostgreSQL table, shared by every replica of a service that
/// signs in as one OAuth client — processes on one machine or on many.
///
/// The row (`session_bench_sessions`, keyed by the session's name) holds the grant, or nulls once
/// the session has ended; it is made when the storage is first opened and never deleted, so a row
/// lock always has a row to take. Every save also sends `NOTIFY` on the session's channel with the
/// new generation (never a token); ``announcements()`` listens on it (`LISTEN`, on a connection of
/// its own) and reads the row back after each notification, so a store learns of a grant another
/// replica saved the moment it commits (``AnnouncingTokenStorage``).
///
/// A refresh takes its turn (``whileRefreshing(_:)``) as ``Coordination`` says:
/// - ``Coordination/advisoryLock``: `pg_advisory_lock` on a key hashed from the session's name,
///   held by the turn's connection until the body returns.
/// - ``Coordination/rowLock``: `SELECT … FOR UPDATE` on the session's row in a transaction; the
///   save of the new grant commits it (so the grant is durable before any caller sees it), and
///   the lock goes with the commit.
/// - ``Coordination/unlocked``: no lock at all. Reference-broken: a replica checks the row, finds
///   the token as old as its own, and refreshes, while another does the same.
/// - ``Coordination/advisoryLockThenProceed``: the advisory lock, except that a waiter that gives up
///   goes ahead without it. Reference-broken: a holder that is slow, not dead, still refreshes.
///
/// A waiter gives up after ``lockTimeout`` (`lock_timeout` and `statement_timeout`): the refresh fails as a
/// transient error and the store's callers may try again. A holder that dies loses its
/// connection, and the server drops its lock at once.
///
/// No call waits for the server longer than ``answerTimeout``: a server that is down, or that
/// stops answering, fails the call with ``StorageError/unreachable(_:)`` and the connection is
/// dropped (the next call connects again).
///
/// Calls made while this storage holds its turn (the store reading the row again, saving the new
/// grant, a sign-out clearing it) go over the turn's connection, inside its transaction; others
/// over a connection of their own. Synchronous calls block their thread on the query, as the
/// file backends block on `fsync`; the store's read path never makes one.
public final class PostgresTokenStorage: AnnouncingTokenStorage {
    /// How replicas keep each other from refreshing at once.
    public enum Coordination: String, Sendable, CaseIterable {
        case advisoryLock = "advisory-lock"
        case rowLock = "row-lock"
        case unlocked
        /// The advisory lock, but a waiter that times out refreshes anyway, so as not to fail its
        /// callers. Reference-broken: while the holder is only slow, two replicas refresh.
        case advisoryLockThenProceed = "advisory-lock-then-proceed"
    }

    /// The table every session lives in.
    public static let table = "session_bench_sessions"

    public let location: PostgresLocation
    public let coordination: Coordination
    public let lockTimeout: Duration
    /// The longest any call waits for the server: a statement waits at most ``lockTimeout`` there,
    /// and this leaves as much again and a second for the network and a busy machine.
    public var answerTimeout: Duration { Self.answerTimeout(lockTimeout: lockTimeout) }

    static func answerTimeout(lockTimeout: Duration) -> Duration { lockTimeout * 2 + .seconds(1) }
    /// The session's name: the row's key, and the source of its lock key and channel.
    let key: String
    /// `NOTIFY` channel of this session.
    let channel: String

    /// The connection for calls outside a turn, made on first use.
    let plain = Mutex<PostgresConnection?>(nil)
    /// Connections for turns, not in use now.
    let spare = Mutex<[PostgresConnection]>([])
    /// The turn under way in this storage: its connection, and whether its transaction (row lock)
    /// is still open.
    let turn = Mutex<Turn?>(nil)
    /// The listening task behind ``announcements()``, cancelled when the storage goes.
    let listening = Mutex<Task<Void, Never>?>(nil)
    /// How many times a listener of ``announcements()`` has had its `LISTEN` accepted.
    let listens = Atomic<Int>(0)

    /// Whether ``announcements()`` has a listener in place: the server accepted its `LISTEN`, so a
    /// grant another replica commits from now on is announced to it. (A grant committed before
    /// is not: a caller that must not miss one waits for this.)
    public var isListening: Bool { listens.load(ordering: .acquiring) > 0 }

    struct Turn {
        var connection: PostgresConnection
        var openTransaction: Bool
    }

    static let logger = Logger(label: "session-bench.postgres", factory: { _ in SwiftLogNoOpLogHandler() })
    static let connectionIDs = Atomic<Int>(0)

    /// Opens the session called `session` at `location`, creating the table and the session's
    /// row if missing. Throws ``StorageError/writeFailed(_:)`` naming the server and the cause
    /// when the server cannot be reached or refuses.
    public init(
        location: PostgresLocation, session: String, coordination: Coordination,
        lockTimeout: Duration = .seconds(2)
    ) throws(StorageError) {
        self.location = location
        self.coordination = coordination
        self.lockTimeout = lockTimeout
        key = session
        channel = "session_bench_" + String(UInt64(truncatingIfNeeded: Self.stableHash(session)), radix: 16)
        try withPlainConnection { connection throws(StorageError) in
            try Self.prepareTable(on: connection, within: answerTimeout, location: location)
            try query(
                "INSERT INTO \(unescaped: Self.table) (session_key) VALUES (\(session)) ON CONFLICT DO NOTHING",
                on: connection)
        }
    }

    deinit {
        listening.withLock(visibleTo: self) { $0?.cancel() }
        for connection in spare.withLock(visibleTo: self, { $0 }) { Self.drop(connection) }
        if let connection = plain.withLock(visibleTo: self, { $0 }) { Self.drop(connection) }
    }

    // MARK: TokenStorage

    public func load() throws(StorageError) -> TokenGrant? {
        try withConnection { connection throws(StorageError) in
            let result = try query(
                """
                SELECT access_token, subject, generation, expires_at, refresh_token
                FROM \(unescaped: Self.table) WHERE session_key = \(key)
                """, on: connection)
            guard let row = result.rows.first else {
                throw StorageError.unreadable("\(Self.table): the session's row is gone")
            }
            let columns: (String?, String?, Int64?, Int64?, String?)
            do { columns = try row.decode((String?, String?, Int64?, Int64?, String?).self) } catch {
                throw StorageError.unreadable("\(Self.table): a column of the session's row has the wrong type")
            }
            return try Self.grant(columns)
        }
    }

    public func save(_ grant: TokenGrant) throws(StorageError) {
        let generation = Int64(clamping: grant.accessToken.generation)
        try withConnection(committing: true) { connection throws(StorageError) in
            // One round trip: the upsert, and the notification of it (sent when it commits).
            try query(
                """
                WITH saved AS (
                    INSERT INTO \(unescaped: Self.table)
                        (session_key, access_token, subject, generation, expires_at, refresh_token, updated_at)
                    VALUES (\(key), \(grant.accessToken.value), \(grant.accessToken.subject.rawValue), \(generation),
                        \(grant.accessToken.expiresAt.nanoseconds), \(grant.refreshToken.value), now())
                    ON CONFLICT (session_key) DO UPDATE SET
                        access_token = excluded.access_token, subject = excluded.subject,
                        generation = excluded.generation, expires_at = excluded.expires_at,
                        refresh_token = excluded.refresh_token, updated_at = excluded.updated_at
                    RETURNING generation)
                SELECT pg_notify(\(channel), generation::text) FROM saved
                """, on: connection)
        }
    }

    public func clear() throws(StorageError) {
        try withConnection(committing: true) { connection throws(StorageError) in
            try query(
                """
                WITH cleared AS (
                    UPDATE \(unescaped: Self.table) SET access_token = NULL, subject = NULL, generation = NULL,
                        expires_at = NULL, refresh_token = NULL, updated_at = now()
                    WHERE session_key = \(key) RETURNING 0)
                SELECT pg_notify(\(channel), '0') FROM cleared
                """, on: connection)
        }
    }

    /// Deletes the session's row: what a run leaves behind, tokens included if it did not end
    /// signed out.
    public static func remove(session: String, at location: PostgresLocation) throws(StorageError) {
        try remove(sessions: [session], at: location)
    }

    /// Deletes the rows of `sessions`.
    public static func remove(sessions: [String], at location: PostgresLocation) throws(StorageError) {
        try onServer(location) { connection, timeout throws(StorageError) in
            for session in sessions {
                try query(
                    "DELETE FROM \(unescaped: table) WHERE session_key = \(session)", on: connection, within: timeout,
                    location: location)
            }
        }
    }

    /// The name of every session kept at `location`: the runs that have a row, ended or not.
    public static func sessions(at location: PostgresLocation) throws(StorageError) -> [String] {
        try onServer(location) { connection, timeout throws(StorageError) in
            let result = try query(
                "SELECT session_key FROM \(unescaped: table)", on: connection, within: timeout, location: location)
            return result.rows.compactMap { try? $0.decode(String.self) }
        }
    }

    /// Runs `body` on a connection of its own to `location`, the table made if missing, then
    /// closes it; `body` gets the longest it may wait for an answer.
    private static func onServer<R>(
        _ location: PostgresLocation, _ body: (PostgresConnection, Duration) throws(StorageError) -> R
    ) throws(StorageError) -> R {
        let timeout = answerTimeout(lockTimeout: PostgresBackends.lockTimeout)
        let connection = try wait(
            PostgresConnection.connect(
                on: MultiThreadedEventLoopGroup.singleton.any(), configuration: location.configuration(connectingWithin: timeout),
                id: connectionIDs.add(1, ordering: .relaxed).newValue, logger: logger),
            within: timeout, location: location)
        defer { drop(connection) }
        try prepareTable(on: connection, within: timeout, location: location)
        return try body(connection, timeout)
    }

    // MARK: Connections

    /// Runs `statement` on `connection`, waiting at most ``answerTimeout``.
    @discardableResult
    func query(_ statement: PostgresQuery, on connection: PostgresConnection) throws(StorageError)
        -> PostgresQueryResult
    {
        try Self.query(statement, on: connection, within: answerTimeout, location: location)
    }

    /// Runs `body` on the turn's connection while this storage holds its turn, else on the plain
    /// one. `committing`: a write that ends the turn's transaction, if one is open, with its commit
    /// — the grant is durable when the call returns, and the row lock is released with it.
    @discardableResult
    func withConnection<R>(
        committing: Bool = false, _ body: (PostgresConnection) throws(StorageError) -> R
    ) throws(StorageError) -> R {
        if let current = turn.withLock(visibleTo: self, { $0 }) {
            let result = try body(current.connection)
            if committing, current.openTransaction {
                try query("COMMIT", on: current.connection)
                turn.withLock(visibleTo: self) { $0?.openTransaction = false }
            }
            return result
        }
        return try withPlainConnection(body)
    }

    @discardableResult
    func withPlainConnection<R>(_ body: (PostgresConnection) throws(StorageError) -> R) throws(StorageError)
        -> R
    {
        try plain.withLock(visibleTo: self) { plain throws(StorageError) -> R in
            let connection: PostgresConnection
            if let open = plain, !open.isClosed {
                connection = open
            } else {
                connection = try Self.wait(
                    PostgresConnection.connect(
                        on: MultiThreadedEventLoopGroup.singleton.any(),
                        configuration: location.configuration(connectingWithin: answerTimeout),
                        id: Self.connectionIDs.add(1, ordering: .relaxed).newValue, logger: Self.logger),
                    within: answerTimeout, location: location)
                plain = connection
                for setting in Self.timeouts(milliseconds: lockTimeoutMilliseconds) {
                    try query(setting, on: connection)
                }
            }
            return try body(connection)
        }
    }
}
#endif
