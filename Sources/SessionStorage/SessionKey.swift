import Crypto
import Foundation
import SessionContract

/// The 256-bit AES key of an encrypted backend, kept in `<keyDirectory>/session.key`, apart from
/// the data it protects so that copying the data folder alone (a backup, a sync) reveals nothing.
///
/// The first backend to find no key file creates one with `AtomicFile.createIfAbsent`, so two
/// processes starting at once end up with the same key rather than each overwriting the other's.
/// The key bytes are never printed or put in an error.
enum SessionKey {
    static let fileName = "session.key"
    static let byteCount = 32

    /// The key in `keyDirectory`, created if there is none. The folder is created with
    /// `folderMode` and a new key file gets `fileMode`. Throws ``StorageError/unreadable(_:)``
    /// when a key file exists but is not a 256-bit key.
    static func loadOrCreate(in keyDirectory: String, folderMode: mode_t = 0o700, fileMode: mode_t = 0o600)
        throws(StorageError) -> SymmetricKey
    {
        try FileSystem.makeFolder(keyDirectory, mode: folderMode)
        let path = FileSystem.join(keyDirectory, fileName)
        if let existing = try read(path) { return existing }
        let fresh = SymmetricKey(size: .bits256)
        let bytes = fresh.withUnsafeBytes { Data($0) }
        if try AtomicFile.createIfAbsent(bytes, at: path, mode: fileMode) { return fresh }
        // Another process created the key between the read and the link: use theirs.
        guard let theirs = try read(path) else { throw .unreadable("\(fileName): vanished while being created") }
        return theirs
    }

    private static func read(_ path: String) throws(StorageError) -> SymmetricKey? {
        guard let bytes = try AtomicFile.read(path) else { return nil }
        guard bytes.count == byteCount else {
            throw .unreadable("\(fileName): not a 256-bit key (\(bytes.count) bytes, expected \(byteCount))")
        }
        return SymmetricKey(data: bytes)
    }
}
