#if Storage
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

    /// Bound into every seal, so a box sealed by this key for another purpose does not open here.
    static let context = Data("session-bench session v1".utf8)

    /// `plain` sealed with AES-256-GCM under `key` (a fresh nonce each time): nonce, ciphertext
    /// and tag in one. `name` names the file or table in an error.
    static func seal(_ plain: Data, with key: SymmetricKey, for name: String) throws(StorageError) -> Data {
        do {
            // `combined` is nil only for nonces of non-standard size; `seal` draws a standard one.
            guard let sealed = try AES.GCM.seal(plain, using: key, authenticating: context).combined else {
                throw StorageError.writeFailed("\(name): sealing gave no combined box")
            }
            return sealed
        } catch {
            throw .writeFailed("\(name): the session could not be sealed")
        }
    }

    /// What ``seal(_:with:for:)`` sealed; throws ``StorageError/unreadable(_:)`` for a box that is
    /// torn, tampered with, or sealed with another key.
    static func open(_ sealed: Data, with key: SymmetricKey, from name: String) throws(StorageError) -> Data {
        do {
            return try AES.GCM.open(AES.GCM.SealedBox(combined: sealed), using: key, authenticating: context)
        } catch {
            throw .unreadable("\(name): does not open (torn, tampered or sealed with another key)")
        }
    }

    private static func read(_ path: String) throws(StorageError) -> SymmetricKey? {
        guard let bytes = try AtomicFile.read(path) else { return nil }
        guard bytes.count == byteCount else {
            throw .unreadable("\(fileName): not a 256-bit key (\(bytes.count) bytes, expected \(byteCount))")
        }
        return SymmetricKey(data: bytes)
    }
}
#endif
