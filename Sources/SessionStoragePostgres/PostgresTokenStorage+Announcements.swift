#if PostgreSQL
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import SessionContract
import SessionStorage
import SessionSync
import Synchronization

/// `LISTEN` on the session's channel: the grants other replicas save, as they commit.
extension PostgresTokenStorage {
    // MARK: AnnouncingTokenStorage

    /// One stream per call; each listens on a connection of its own until the storage is released
    /// (reconnecting after a lost connection, a notification being a hint: the store's own turn
    /// reads the row again anyway).
    public func announcements() -> AsyncStream<TokenGrant> {
        let (stream, continuation) = AsyncStream.makeStream(of: TokenGrant.self, bufferingPolicy: .bufferingNewest(1))
        let task = Task { [weak self, location, channel, timeout = answerTimeout] in
            defer { continuation.finish() }
            while !Task.isCancelled {
                do {
                    let connection = try await PostgresConnection.connect(
                        configuration: location.configuration(connectingWithin: timeout),
                        id: Self.connectionIDs.add(1, ordering: .relaxed).newValue, logger: Self.logger)
                    defer { Self.drop(connection) }
                    try await connection.listen(on: channel) { notifications in
                        self?.listens.add(1, ordering: .releasing)
                        for try await _ in notifications {
                            guard let self else { return }
                            if let grant = try await self.read(on: connection) { continuation.yield(grant) }
                        }
                    }
                } catch {
                    if Task.isCancelled || self == nil { return }
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
        }
        listening.withLock(visibleTo: self) { listening in
            listening?.cancel()
            listening = task
        }
        return stream
    }

    /// The row read on `connection` without blocking a thread (the listener's read).
    func read(on connection: PostgresConnection) async throws -> TokenGrant? {
        let rows = try await connection.query(
            """
            SELECT access_token, subject, generation, expires_at, refresh_token
            FROM \(unescaped: Self.table) WHERE session_key = \(key)
            """, logger: Self.logger)
        for try await row in rows.decode((String?, String?, Int64?, Int64?, String?).self) {
            return try Self.grant(row)
        }
        return nil
    }
}
#endif
