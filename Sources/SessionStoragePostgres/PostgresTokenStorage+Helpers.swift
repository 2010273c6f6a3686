#if PostgreSQL
import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import SessionContract
import SessionStorage
import SessionSync
import Synchronization

/// The table, the rows, queries bounded in time, and errors without secrets.
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
    static func prepareTable(on connection: PostgresConnection, within timeout: Duration, location: PostgresLocation)
        throws(StorageError)
    {
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
            try query(statement, on: connection, within: timeout, location: location)
        }
    }

    /// Runs `statement` on `connection` and waits for all of its rows on this thread (never an
    /// event loop's: the store's threads call here), at most `timeout`.
    @discardableResult
    static func query(
        _ statement: PostgresQuery, on connection: PostgresConnection, within timeout: Duration,
        location: PostgresLocation
    ) throws(StorageError) -> PostgresQueryResult {
        // A query written to a connection that has closed is never answered: refuse it here.
        guard !connection.isClosed else { throw .unreachable("PostgreSQL at \(location): the connection was closed") }
        return try wait(connection.query(statement, logger: logger), within: timeout, dropping: connection, location: location)
    }

    /// Waits for `future` on this thread, at most `timeout`. A server that stops answering, or a
    /// connection that closes under a query (whose answer then never comes), is unreachable; the
    /// connection, if given, is dropped so that it is not used again.
    @discardableResult
    static func wait<T: Sendable>(
        _ future: EventLoopFuture<T>, within timeout: Duration, dropping connection: PostgresConnection? = nil,
        location: PostgresLocation
    ) throws(StorageError) -> T {
        do { return try bounded(future, within: timeout, dropping: connection).wait() } catch {
            throw failure(error, location: location)
        }
    }

    /// `future`, or a failure once `timeout` has passed without its result.
    static func bounded<T: Sendable>(
        _ future: EventLoopFuture<T>, within timeout: Duration, dropping connection: PostgresConnection?
    ) -> EventLoopFuture<T> {
        let promise = future.eventLoop.makePromise(of: T.self)
        let timer = future.eventLoop.scheduleTask(in: TimeAmount(timeout)) {
            promise.fail(NoAnswer(timeout: timeout))
            if let connection { drop(connection) }
        }
        future.whenComplete { result in
            timer.cancel()
            // A result after the timeout finds the promise failed already: completing it again does nothing.
            promise.completeWith(result)
        }
        return promise.futureResult
    }

    /// No answer from the server within the time a statement may take there.
    struct NoAnswer: Error {
        let timeout: Duration
    }

    /// The storage error for `error`: ``StorageError/unreachable(_:)`` when the server could not be
    /// reached or went away (refused, reset, closed, shutting down, silent), else
    /// ``StorageError/writeFailed(_:)`` with the server's message.
    static func failure(_ error: any Error, location: PostgresLocation) -> StorageError {
        let why = "PostgreSQL at \(location): \(describe(error))"
        return isUnreachable(error) ? .unreachable(why) : .writeFailed(why)
    }

    static func isUnreachable(_ error: any Error) -> Bool {
        // A task cancelled while it connected was not refused by anything.
        if error is CancellationError { return false }
        guard let error = error as? PSQLError else { return true }  // NoAnswer, a socket's error
        switch error.code {
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown: return true
        case .server:
            // Connection exceptions (08…) and operator intervention: a shutdown, a crash, a server
            // that is starting or stopping (57P0…).
            let state = error.serverInfo?[.sqlState] ?? ""
            return state.hasPrefix("08") || state.hasPrefix("57P")
        default: return false
        }
    }

    /// The server's message and SQLSTATE, or what failed on the way there; never a query's
    /// parameters (they hold tokens).
    static func describe(_ error: any Error) -> String {
        if let error = error as? NoAnswer {
            return "no answer within \(error.timeout.components.seconds) s"
        }
        guard let error = error as? PSQLError else { return reason(error) }
        if let message = error.serverInfo?[.message] {
            let state = error.serverInfo?[.sqlState].map { " (SQLSTATE \($0))" } ?? ""
            return message + state
        }
        switch error.code {
        case .serverClosedConnection, .uncleanShutdown: return "the server closed the connection"
        case .clientClosedConnection: return "the connection was closed"
        default: break
        }
        if let underlying = error.underlying { return reason(underlying) }
        return "\(error.code)"
    }

    /// A socket's error in a few words: `Connection refused`, `no answer within 5 s`.
    static func reason(_ error: any Error) -> String {
        if let error = error as? NIOConnectionError, let first = error.connectionErrors.first {
            return reason(first.error)
        }
        if let error = error as? IOError { return String(cString: strerror(error.errnoCode)) }
        if case ChannelError.connectTimeout(let timeout) = error {
            return "no answer within \(timeout.nanoseconds / 1_000_000_000) s"
        }
        return "\(error)"
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
