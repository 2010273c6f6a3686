#if PostgreSQL
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import SessionContract
import SessionStorage
import SessionSync
import Synchronization

/// The table, the rows, blocking on a query, and errors without secrets.
extension PostgresTokenStorage {
    // MARK: Helpers

    /// The grant a row's columns hold; `nil` for an ended session (all null).
    static func grant(_ columns: (String?, String?, Int64?, Int64?, String?)) throws(StorageError) -> TokenGrant? {
        switch columns {
        case (nil, nil, nil, nil, nil):
            return nil
        case (let access?, let subject?, let generation?, let expiresAt?, let refresh?) where generation >= 0:
            return TokenGrant(
                accessToken: AccessToken(
                    value: access, subject: Subject(subject), generation: UInt64(generation),
                    expiresAt: TokenInstant(nanoseconds: expiresAt)),
                refreshToken: RefreshToken(refresh))
        default:
            throw StorageError.unreadable("\(table): the session's row is partly empty")
        }
    }

    /// Closes `connection` without waiting; the server releases whatever it held. The connection is
    /// kept until the close completes (one released while still open is a programming error).
    static func drop(_ connection: PostgresConnection) {
        let closing: EventLoopFuture<Void> = connection.close()
        closing.whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    /// Creates the table if it is missing, under a transaction-scoped advisory lock so that
    /// replicas starting together do not race on it.
    static func prepareTable(on connection: PostgresConnection, location: PostgresLocation) throws(StorageError) {
        for statement: PostgresQuery in [
            "BEGIN",
            "SELECT pg_advisory_xact_lock(hashtextextended(\(table), 0))",
            """
            CREATE TABLE IF NOT EXISTS \(unescaped: table) (
                session_key text PRIMARY KEY,
                access_token text, subject text, generation bigint, expires_at bigint, refresh_token text,
                updated_at timestamptz NOT NULL DEFAULT now())
            """,
            "COMMIT",
        ] {
            try wait(connection.query(statement, logger: logger), location: location)
        }
    }

    /// Waits for `future` on this thread (never an event loop's: the store's threads call here).
    @discardableResult
    static func wait<T: Sendable>(_ future: EventLoopFuture<T>, location: PostgresLocation) throws(StorageError) -> T {
        do { return try future.wait() } catch {
            throw .writeFailed("PostgreSQL at \(location): \(describe(error))")
        }
    }

    /// The server's message and SQLSTATE, or what failed on the way there; never a query's
    /// parameters (they hold tokens).
    static func describe(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(type(of: error))" }
        if let message = error.serverInfo?[.message] {
            let state = error.serverInfo?[.sqlState].map { " (SQLSTATE \($0))" } ?? ""
            return message + state
        }
        if let underlying = error.underlying { return "\(error.code): \(underlying)" }
        return "\(error.code)"
    }

    /// FNV-1a: the same in every process (Swift's `hashValue` is seeded per process).
    static func stableHash(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }
}
#endif
