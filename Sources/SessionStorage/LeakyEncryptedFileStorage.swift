#if Storage
import Crypto
import Foundation
import SessionContract

/// **Reference-broken.** Claims what ``EncryptedFileStorage`` delivers (same key handling, AES-GCM)
/// but, like many a "we encrypt the tokens" library, seals only the refresh token. The record
/// `<directory>/session.sealed.json` keeps the user id (`subject`), the access token, its
/// generation and expiry in clear beside `sealedRefreshToken` (the base64 of a sealed box).
/// It also writes every file, key included, with mode 0644 in 0755 folders (what an unset umask
/// gives), so other local users can read the access token, the user id, and even the key.
///
/// The bugs it reproduces: personal data and a live bearer token at rest in clear, and
/// world-readable secrets. It round-trips exactly and writes atomically, so only the at-rest
/// check (scan every byte under the backend's folder for token and user-id bytes, and every file
/// mode for group or other bits) can catch it; its descriptor claims protection so that the check
/// runs on it.
public final class LeakyEncryptedFileStorage: TokenStorage {
    /// The name of the session file inside the data directory.
    public static let fileName = "session.sealed.json"
    /// The mode of every file it writes: the slip it reproduces.
    static let fileMode: mode_t = 0o644
    static let folderMode: mode_t = 0o755

    /// Where the half-sealed session is kept.
    public let path: String
    private let key: SymmetricKey

    /// Keeps the session in `directory` and its key in `keyDirectory`, creating either folder
    /// (mode 0755) and the key (mode 0644) if missing.
    public init(directory: String, keyDirectory: String) throws(StorageError) {
        key = try SessionKey.loadOrCreate(in: keyDirectory, folderMode: Self.folderMode, fileMode: Self.fileMode)
        try FileSystem.makeFolder(directory, mode: Self.folderMode)
        path = FileSystem.join(directory, Self.fileName)
    }

    public func load() throws(StorageError) -> TokenGrant? {
        guard let data = try AtomicFile.read(path) else { return nil }
        let record = try JSONRecord.decode(Record.self, from: data, fileName: Self.fileName)
        guard let sealed = Data(base64Encoded: record.sealedRefreshToken) else {
            throw .unreadable("\(Self.fileName): not a stored session (sealedRefreshToken is not base64)")
        }
        let refreshToken: Data
        do {
            refreshToken = try AES.GCM.open(AES.GCM.SealedBox(combined: sealed), using: key)
        } catch {
            throw .unreadable("\(Self.fileName): does not open (torn, tampered or sealed with another key)")
        }
        return TokenGrant(
            accessToken: AccessToken(
                value: record.accessToken, subject: Subject(record.subject), generation: record.generation,
                expiresAt: TokenInstant(nanoseconds: record.expiresAt)),
            refreshToken: RefreshToken(String(decoding: refreshToken, as: UTF8.self)))
    }

    public func save(_ grant: TokenGrant) throws(StorageError) {
        let box: AES.GCM.SealedBox
        do {
            box = try AES.GCM.seal(Data(grant.refreshToken.value.utf8), using: key)
        } catch {
            throw .writeFailed("\(Self.fileName): the refresh token could not be sealed")
        }
        guard let sealed = box.combined else { throw .writeFailed("\(Self.fileName): sealing gave no combined box") }
        let record = Record(
            subject: grant.accessToken.subject.rawValue, accessToken: grant.accessToken.value,
            generation: grant.accessToken.generation, expiresAt: grant.accessToken.expiresAt.nanoseconds,
            sealedRefreshToken: sealed.base64EncodedString())
        try AtomicFile.write(JSONRecord.encode(record, for: Self.fileName), to: path, mode: Self.fileMode)
    }

    public func clear() throws(StorageError) {
        try AtomicFile.remove(path)
    }

    /// The on-disk record: everything but the refresh token in clear.
    private struct Record: Codable {
        var subject: String
        var accessToken: String
        var generation: UInt64
        var expiresAt: Int64
        var sealedRefreshToken: String
    }
}
#endif
