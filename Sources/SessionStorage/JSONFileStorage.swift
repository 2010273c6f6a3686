import Foundation
import SessionContract

/// The plaintext reference backend, the analogue of an app's `UserDefaults`: the session is a
/// JSON file, `<directory>/session.json`, that anyone who can read the file can read, tokens and
/// user id included.
///
/// What it does guarantee is crash safety: each save replaces the file through ``AtomicFile``
/// (temporary file, `fsync`, `rename`, folder `fsync`), so after a crash ``load()`` returns either
/// the previous session or the new one, and a file that is torn or corrupt anyway is reported as
/// ``StorageError/unreadable(_:)``, never as "no session" or as a wrong grant. The file and its
/// folder are the owner's alone (0600, 0700), which limits who can read it but is no encryption.
///
/// Saves from several threads need no lock: each writes its own temporary file and the renames
/// are atomic, so the last rename wins whole.
public final class JSONFileStorage: TokenStorage {
    /// The name of the session file inside the directory.
    public static let fileName = "session.json"

    /// Where the session is kept.
    public let path: String

    /// Keeps the session in `directory`, creating the folder (mode 0700) if it is missing.
    public init(directory: String) throws(StorageError) {
        try FileSystem.makeFolder(directory, mode: 0o700)
        path = FileSystem.join(directory, Self.fileName)
    }

    public func load() throws(StorageError) -> TokenGrant? {
        guard let data = try AtomicFile.read(path) else { return nil }
        return try StoredGrant.decode(data, from: Self.fileName)
    }

    public func save(_ grant: TokenGrant) throws(StorageError) {
        try AtomicFile.write(StoredGrant(grant).encoded(for: Self.fileName), to: path)
    }

    public func clear() throws(StorageError) {
        try AtomicFile.remove(path)
    }
}
