import Foundation
import SessionContract
import SessionStorage
import Testing

/// Damage to a correct backend's data is reported as ``StorageError/unreadable(_:)``: never as "no
/// session" (which would sign the user out silently) and never as a wrong grant.
@Suite("Correct backends report damage")
struct CorruptionTests {
    /// The backend's data file: its one file outside the key folder.
    private func dataFile(in folder: ScratchFolder) throws -> String {
        let data = folder.files().filter { !$0.hasPrefix("key/") }
        try #require(data.count == 1)
        return folder.path(data[0])
    }

    /// Loads from a storage made afresh on `folder`, expecting `.unreadable` whose text names no secret.
    private func expectUnreadable(_ backend: StorageBackend, _ folder: ScratchFolder, grant: TokenGrant) throws {
        let storage = try backend.make(directory: folder.path)
        do {
            let loaded = try storage.load()
            Issue.record("load returned \(loaded.map { "a grant, generation \($0.accessToken.generation)" } ?? "nil")")
        } catch {
            guard case .unreadable(let why) = error else {
                Issue.record("expected unreadable, got \(error)")
                return
            }
            for secret in SampleGrants.secrets(of: grant) {
                #expect(!why.utf8.contains(secret.bytes), "the error names the \(secret.what)")
            }
        }
    }

    /// The correct backends that keep their session in one data file. SQLite's damage is its own
    /// test, sealed or not: SQLite reads a file cut to nothing as an empty database, and one cut by
    /// its last bytes may still hold the row whole.
    static let fileBackends = StorageBackendCatalog.correct.filter { !$0.name.hasPrefix("sqlite") }

    @Test("a truncated data file is unreadable", arguments: fileBackends)
    func truncated(backend: StorageBackend) throws {
        let folder = try ScratchFolder()
        try backend.make(directory: folder.path).save(SampleGrants.grant())
        let path = try dataFile(in: folder)
        let whole = try Data(contentsOf: URL(fileURLWithPath: path))
        for length in [0, 1, whole.count / 2, whole.count - 1] {
            try whole.prefix(length).write(to: URL(fileURLWithPath: path))
            try expectUnreadable(backend, folder, grant: SampleGrants.grant())
        }
    }

    @Test(
        "garbage in the data file is unreadable, and the error does not quote it",
        arguments: fileBackends)
    func garbage(backend: StorageBackend) throws {
        let folder = try ScratchFolder()
        try backend.make(directory: folder.path).save(SampleGrants.grant())
        let path = try dataFile(in: folder)
        let grant = SampleGrants.grant()
        let junk = [
            "\(grant.refreshToken.value) \(grant.accessToken.subject.rawValue)",
            "{\"accessToken\": \"\(grant.accessToken.value)\"}",
            "[1, 2, 3]",
            String(repeating: "\u{FF}", count: 64),
        ]
        for text in junk {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            try expectUnreadable(backend, folder, grant: grant)
        }
    }

    #if Storage
    @Test("a flipped byte anywhere in the sealed file is caught")
    func flippedByte() throws {
        let backend = try #require(StorageBackendCatalog.named("encrypted-file"))
        let folder = try ScratchFolder()
        try backend.make(directory: folder.path).save(SampleGrants.grant())
        let path = try dataFile(in: folder)
        let sealed = try Data(contentsOf: URL(fileURLWithPath: path))
        // Nonce, ciphertext and tag alike.
        for index in sealed.indices {
            var tampered = sealed
            tampered[index] ^= 0x01
            try tampered.write(to: URL(fileURLWithPath: path))
            try expectUnreadable(backend, folder, grant: SampleGrants.grant())
        }
    }
    #endif

    #if Storage
    @Test("a session sealed with another key is unreadable")
    func wrongKey() throws {
        let backend = try #require(StorageBackendCatalog.named("encrypted-file"))
        let folder = try ScratchFolder()
        try backend.make(directory: folder.path).save(SampleGrants.grant())
        let other = try ScratchFolder()
        _ = try backend.make(directory: other.path)
        try FileManager.default.removeItem(atPath: folder.path("key/session.key"))
        try FileManager.default.copyItem(atPath: other.path("key/session.key"), toPath: folder.path("key/session.key"))
        try expectUnreadable(backend, folder, grant: SampleGrants.grant())
    }
    #endif

    #if Storage
    @Test("a key file of the wrong size is refused, and the key survives a clear")
    func keyFile() throws {
        let backend = try #require(StorageBackendCatalog.named("encrypted-file"))
        let folder = try ScratchFolder()
        let storage = try backend.make(directory: folder.path)
        let key = try Data(contentsOf: URL(fileURLWithPath: folder.path("key/session.key")))
        #expect(key.count == 32)
        try storage.save(SampleGrants.grant())
        try storage.clear()
        #expect(try Data(contentsOf: URL(fileURLWithPath: folder.path("key/session.key"))) == key)

        try key.prefix(16).write(to: URL(fileURLWithPath: folder.path("key/session.key")))
        #expect(throws: StorageError.unreadable("session.key: not a 256-bit key (16 bytes, expected 32)")) {
            try backend.make(directory: folder.path)
        }
    }
    #endif
}
