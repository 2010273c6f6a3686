#if Storage
import Crypto
import Foundation
import SessionContract

/// The session sealed with AES-256-GCM, the file analogue of the Keychain: nothing of the session
/// (tokens, user id, even the generation) is in clear on disk, and every file is the owner's only.
///
/// The data file `<directory>/session.sealed` holds the sealed box's combined bytes (nonce,
/// ciphertext, tag) of the same JSON record ``JSONFileStorage`` writes; the key lives apart, in
/// `<keyDirectory>/session.key` (see the key's creation rules there). A fresh nonce is drawn for
/// every save. Files are written through ``AtomicFile`` with mode 0600 in 0700 folders.
///
/// GCM authenticates as well as encrypts, so a torn, truncated or tampered file, or one sealed
/// with another key, fails to open and ``load()`` throws ``StorageError/unreadable(_:)``: it never
/// returns a wrong grant and never mistakes damage for "no session".
public final class EncryptedFileStorage: TokenStorage {
    /// The name of the sealed session file inside the data directory.
    public static let fileName = "session.sealed"
    /// Where the sealed session is kept.
    public let path: String
    private let key: SymmetricKey

    /// Keeps the sealed session in `directory` and its key in `keyDirectory`, creating either folder
    /// (mode 0700) and the key if missing. Throws when the key file exists but is not a 256-bit key.
    public init(directory: String, keyDirectory: String) throws(StorageError) {
        key = try SessionKey.loadOrCreate(in: keyDirectory)
        try FileSystem.makeFolder(directory, mode: 0o700)
        path = FileSystem.join(directory, Self.fileName)
    }

    public func load() throws(StorageError) -> TokenGrant? {
        guard let sealed = try AtomicFile.read(path) else { return nil }
        return try StoredGrant.decode(SessionKey.open(sealed, with: key, from: Self.fileName), from: Self.fileName)
    }

    public func save(_ grant: TokenGrant) throws(StorageError) {
        let plain = try StoredGrant(grant).encoded(for: Self.fileName)
        try AtomicFile.write(SessionKey.seal(plain, with: key, for: Self.fileName), to: path, mode: 0o600)
    }

    /// Removes the sealed session; the key stays, so the next save needs no new key.
    public func clear() throws(StorageError) {
        try AtomicFile.remove(path)
    }
}
#endif
