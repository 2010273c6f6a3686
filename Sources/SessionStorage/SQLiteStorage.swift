#if Storage
import Crypto
import Foundation
import GRDB
import GRDBSQLite
import SessionContract
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The session as one row of a SQLite database (GRDB) in WAL mode, as a server-side Swift
/// service or an app with a database already would keep it.
///
/// - Crash safety is SQLite's: each save is one transaction, committed to the write-ahead log
///   with `synchronous = FULL` (the log is synced at every commit), so after a crash the row is
///   the previous session or the new one; a torn log frame is ignored by its checksum.
/// - Sign-out leaves nothing behind: `secure_delete` overwrites deleted rows with zeros, and a
///   checkpoint that truncates the log drops the frames that still held them. Without both, the
///   ended session's refresh token stays readable in the file's free pages and in the log.
/// - The database, its log and its shared-memory file are the owner's alone (0600): the
///   database file is made with that mode before SQLite opens it, and SQLite gives its side
///   files the database's mode. The contents are plaintext, unless the storage is made with a
///   key folder: then the row holds one AES-256-GCM sealed box of the session (the same sealed
///   record the encrypted file holds, its key kept apart the same way), and nothing of the
///   session is in clear in the database, its log or its free pages. The database's own pages
///   (table, row id, sizes) stay readable: this seals the session, not the file (SQLCipher would).
public final class SQLiteStorage: TokenStorage {
    /// The database file inside the directory.
    public static let fileName = "session.sqlite"

    public let path: String
    private let configuration: Configuration
    /// Opened, and the table made, at the first call: a damaged file is then reported by the
    /// call that meets it (``load()`` as unreadable), never by making the storage.
    private let database = Mutex<DatabaseQueue?>(nil)

    /// Keeps the session in `<directory>/session.sqlite`, creating the folder (0700) and the
    /// database file (0600) if they are missing. `erasesOnClear: false` is the reference-broken
    /// variant: a plain `DELETE`, which leaves the ended session's bytes in the file.
    /// With `keyDirectory`, the session is sealed with the key kept there (created if missing).
    public init(directory: String, erasesOnClear: Bool = true, keyDirectory: String? = nil) throws(StorageError) {
        // A process meeting a storage fault meets it in SQLite's own writes too.
        if StorageFault.isSet { SQLiteFaults.install() }
        key = try keyDirectory.map { folder throws(StorageError) in try SessionKey.loadOrCreate(in: folder) }
        try FileSystem.makeFolder(directory, mode: 0o700)
        path = FileSystem.join(directory, Self.fileName)
        // Made only if missing (O_EXCL): closing a descriptor of a database file that a connection
        // of this process has open drops every POSIX lock the process holds on it, and another
        // process's connection could then think itself the last one and delete the log.
        let created = FileSystem.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard created >= 0 || -created == EEXIST else { throw FileSystem.writeFailed(path, -created) }
        if created >= 0 { close(created) }
        var configuration = Configuration()
        // Several holders open one database (instances of a shared storage, the next process of a
        // restart): a connection that finds it locked waits its turn instead of failing the call.
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA secure_delete = \(erasesOnClear ? "ON" : "OFF")")
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        self.configuration = configuration
        self.erasesOnClear = erasesOnClear
    }

    private let erasesOnClear: Bool
    /// The sealing key, for a sealed database; `nil` for plaintext columns.
    private let key: SymmetricKey?

    public func load() throws(StorageError) -> TokenGrant? {
        if let key {
            let sealed: Data?
            do {
                sealed = try opened().read { db in
                    try Self.noting(db) { try Data.fetchOne(db, sql: "SELECT sealed FROM sealed_session WHERE id = 1") }
                }
            } catch {
                throw Self.loadFailed(error)
            }
            guard let sealed else { return nil }
            return try StoredGrant.decode(SessionKey.open(sealed, with: key, from: Self.fileName), from: Self.fileName)
        }
        do {
            return try opened().read { db in
                guard let row = try Self.noting(db, { try Row.fetchOne(db, sql: "SELECT * FROM session WHERE id = 1") })
                else { return nil }
                func text(_ column: String) -> String { String(decoding: row[column] as Data, as: UTF8.self) }
                return TokenGrant(
                    accessToken: AccessToken(
                        value: text("access_token"), subject: Subject(text("subject")),
                        generation: UInt64(bitPattern: row["generation"]),
                        expiresAt: TokenInstant(nanoseconds: row["expires_at"])),
                    refreshToken: RefreshToken(text("refresh_token")))
            }
        } catch {
            throw Self.loadFailed(error)
        }
    }

    public func save(_ grant: TokenGrant) throws(StorageError) {
        if let key {
            let sealed = try SessionKey.seal(
                StoredGrant(grant).encoded(for: Self.fileName), with: key, for: Self.fileName)
            try writing { db in
                try db.execute(sql: "INSERT OR REPLACE INTO sealed_session (id, sealed) VALUES (1, ?)", arguments: [sealed])
            }
            return
        }
        try writing { db in
            // Values as BLOBs: SQLite hands TEXT back cut at the first NUL.
            try db.execute(
                sql: """
                    INSERT OR REPLACE INTO session
                        (id, access_token, subject, generation, expires_at, refresh_token)
                    VALUES (1, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    Data(grant.accessToken.value.utf8), Data(grant.accessToken.subject.rawValue.utf8),
                    Int64(bitPattern: grant.accessToken.generation), grant.accessToken.expiresAt.nanoseconds,
                    Data(grant.refreshToken.value.utf8),
                ])
        }
    }

    public func clear() throws(StorageError) {
        try writing { db in
            try db.execute(sql: key == nil ? "DELETE FROM session" : "DELETE FROM sealed_session")
        }
        guard erasesOnClear else { return }
        do {
            let busy = try opened().writeWithoutTransaction { db in
                // Drops the log's frames, which still hold the deleted row; `busy` when a reader
                // kept it from finishing, and the frames are still there.
                try Self.noting(db) { try Int.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") } ?? 0
            }
            guard busy == 0 else { throw StorageError.writeFailed("\(Self.fileName): the log could not be emptied (busy)") }
        } catch let error as StorageError {
            throw error
        } catch {
            throw .writeFailed("\(Self.fileName): \(Self.describe(error))")
        }
    }

    /// Runs `body` in one transaction, committed before it returns; a failure is a failed write
    /// naming SQLite's cause and the system's.
    private func writing(_ body: (Database) throws -> Void) throws(StorageError) {
        do {
            try opened().writeWithoutTransaction { db in
                try Self.noting(db) {
                    try db.inTransaction {
                        try body(db)
                        return .commit
                    }
                }
            }
        } catch {
            throw .writeFailed("\(Self.fileName): \(Self.describe(error))")
        }
    }

    /// The database, opened in WAL mode with its table, on first use.
    private func opened() throws -> DatabaseQueue {
        try database.withLock { database in
            if let database { return database }
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            try queue.writeWithoutTransaction { db in
                try Self.noting(db) { try Self.makeTables(db) }
            }
            database = queue
            return queue
        }
    }

    /// WAL mode and the tables, made if missing.
    private static func makeTables(_ db: Database) throws {
                try db.execute(sql: "PRAGMA journal_mode = WAL")
                try db.execute(
                    sql: """
                        CREATE TABLE IF NOT EXISTS sealed_session (
                            id INTEGER PRIMARY KEY CHECK (id = 1), sealed BLOB NOT NULL)
                        """)
                try db.execute(
                    sql: """
                        CREATE TABLE IF NOT EXISTS session (
                            id INTEGER PRIMARY KEY CHECK (id = 1), access_token BLOB NOT NULL,
                            subject BLOB NOT NULL, generation INTEGER NOT NULL, expires_at INTEGER NOT NULL,
                            refresh_token BLOB NOT NULL)
                        """)
    }

    /// A SQLite failure with the system's `errno` behind it, read from the connection as it failed.
    struct Failure: Error {
        let error: DatabaseError
        let systemErrno: Int32
    }

    /// Runs `body` on `db`; a SQLite error it throws comes out as a ``Failure`` that also holds
    /// the `errno` of the system call that failed under it (0 when none did).
    private static func noting<R>(_ db: Database, _ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch let error as DatabaseError {
            throw Failure(error: error, systemErrno: db.sqliteConnection.map(sqlite3_system_errno) ?? 0)
        }
    }

    /// Why a load failed: damage (a file that is not a database, a corrupt one, a sealed box that
    /// does not open) is unreadable; a disk that cannot be written (SQLite writes to open a
    /// database: its log, its tables) or fails is a failed write, never taken for damage.
    private static func loadFailed(_ error: Error) -> StorageError {
        if let error = error as? StorageError { return error }
        let database = (error as? Failure)?.error ?? (error as? DatabaseError)
        let damage: [ResultCode] = [.SQLITE_CORRUPT, .SQLITE_NOTADB, .SQLITE_FORMAT, .SQLITE_MISMATCH]
        if let database, !damage.contains(database.resultCode) {
            return .writeFailed("\(fileName): \(describe(error))")
        }
        return .unreadable("\(fileName): \(describe(error))")
    }

    /// SQLite's result code and message, which name no value (statements take their values as
    /// arguments, and GRDB's error description would print them), and the system's cause when
    /// a system call failed under it (`… (No space left on device (ENOSPC))`).
    static func describe(_ error: Error) -> String {
        let failure = error as? Failure
        guard let database = failure?.error ?? (error as? DatabaseError) else { return "\(type(of: error))" }
        let text = "SQLite error \(database.resultCode.rawValue): \(database.message ?? "no message")"
        var cause: Int32?
        if let code = failure?.systemErrno, code != 0 {
            cause = code
        } else if database.resultCode == .SQLITE_FULL {
            // SQLite keeps the system's cause of an I/O error, not of a full disk: its file layer
            // reports a write that failed with ENOSPC as SQLITE_FULL, and nothing else as it.
            cause = ENOSPC
        }
        let said = text + (cause.map { " (\(FileSystem.message($0)))" } ?? "")
        // SQLite may report a write that failed as what it tried next (a creation that failed as
        // a file it could not open read-only either): the fault's own cause, when there is one.
        guard let fault = StorageFault.failedWith, fault != cause else { return said }
        return said + " after a write failed with \(FileSystem.message(fault))"
    }
}
#endif
