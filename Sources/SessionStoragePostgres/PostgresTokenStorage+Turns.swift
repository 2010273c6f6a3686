#if PostgreSQL
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import SessionContract
import SessionStorage
import SessionSync
import Synchronization

/// The turn to refresh: the lock each coordination takes, the connections turns run on, and the
/// limits they run under.
extension PostgresTokenStorage {
    // MARK: SharedTokenStorage

    public func whileRefreshing<R>(_ body: () async -> R) async throws(StorageError) -> R {
        guard coordination != .unlocked else { return await body() }
        let connection = try await lease()
        do {
            switch coordination {
            case .advisoryLock, .advisoryLockThenProceed:
                try await run("SELECT pg_advisory_lock(hashtextextended(\(key), 0))", on: connection)
            case .rowLock:
                try await run("BEGIN", on: connection)
                try await run(
                    "SELECT 1 FROM \(unescaped: Self.table) WHERE session_key = \(key) FOR UPDATE", on: connection)
            case .unlocked:
                break
            }
        } catch {
            // A wait past the lock timeout, or a connection that failed: nothing is held.
            Self.drop(connection)
            if coordination == .advisoryLockThenProceed { return await body() }
            throw error
        }
        turn.withLock(visibleTo: self) { $0 = Turn(connection: connection, openTransaction: coordination == .rowLock) }
        let result = await body()
        let open = turn.withLock(visibleTo: self) { turn in
            defer { turn = nil }
            return turn?.openTransaction ?? false
        }
        do {
            switch coordination {
            case .advisoryLock, .advisoryLockThenProceed:
                try await run("SELECT pg_advisory_unlock(hashtextextended(\(key), 0))", on: connection)
            case .rowLock: if open { try await run("COMMIT", on: connection) }
            case .unlocked: break
            }
            spare.withLock(visibleTo: self) { $0.append(connection) }
        } catch {
            // The server drops whatever the connection held when it closes.
            Self.drop(connection)
        }
        return result
    }

    /// A connection for a turn: a spare one, or a new one with the lock timeout set.
    func lease() async throws(StorageError) -> PostgresConnection {
        while let connection = spare.withLock(visibleTo: self, { $0.popLast() }) {
            if !connection.isClosed { return connection }
        }
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(
                configuration: location.configuration(connectingWithin: answerTimeout),
                id: Self.connectionIDs.add(1, ordering: .relaxed).newValue, logger: Self.logger)
        } catch {
            throw Self.failure(error, location: location)
        }
        for setting in Self.timeouts(milliseconds: lockTimeoutMilliseconds) { try await run(setting, on: connection) }
        return connection
    }

    /// The limits a connection of this storage runs under. `lock_timeout` alone is not a bound on
    /// a wait: it applies to each lock a statement waits for, and a row lock's second waiter waits
    /// twice (for the tuple, then for the holder's transaction). `statement_timeout` caps the whole
    /// statement; every statement here takes milliseconds unless it waits for a lock. The
    /// keepalives let the server find a replica whose machine vanished (no connection reset) in
    /// about 8 s and end its session, releasing its lock; a process that dies on a live machine
    /// has its connection reset at once.
    static func timeouts(milliseconds: Int64) -> [PostgresQuery] {
        [
            "SET lock_timeout = \(unescaped: "'\(milliseconds)ms'")",
            "SET statement_timeout = \(unescaped: "'\(milliseconds)ms'")",
            "SET tcp_keepalives_idle = 5", "SET tcp_keepalives_interval = 1", "SET tcp_keepalives_count = 3",
        ]
    }

    var lockTimeoutMilliseconds: Int64 {
        lockTimeout.components.seconds * 1000 + lockTimeout.components.attoseconds / 1_000_000_000_000_000
    }

    /// Runs `query` to its end, waiting at most ``answerTimeout``. Every row is read (the future
    /// collects them): postgres-nio reports an error the server sent for a statement (a lock wait
    /// past `lock_timeout`) only to a reader of its rows, so a query whose rows were dropped unread
    /// would look as if it had succeeded.
    func run(_ query: PostgresQuery, on connection: PostgresConnection) async throws(StorageError) {
        // A query written to a connection that has closed is never answered: refuse it here.
        guard !connection.isClosed else { throw .unreachable("PostgreSQL at \(location): the connection was closed") }
        do {
            _ = try await Self.bounded(
                connection.query(query, logger: Self.logger), within: answerTimeout, dropping: connection
            ).get()
        } catch {
            throw Self.failure(error, location: location)
        }
    }
}
#endif
