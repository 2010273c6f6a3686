import Foundation
import SessionContract
import SessionStorage
import Testing

/// What is on disk after a save: the at-rest promise (``StorageBackend/protectsAtRest``) held by
/// the encrypted backend, broken by the leaky one, and not made by the plaintext one.
@Suite("What backends leave at rest")
struct AtRestTests {
    /// What a backend left in clear under `folder` after saving `grant`: each secret found in a file,
    /// and each file or folder others may read. Empty when the at-rest promise holds.
    private func findings(in folder: ScratchFolder, after grant: TokenGrant) throws -> [String] {
        var found: [String] = []
        let files = folder.files()
        try #require(!files.isEmpty)
        for file in files {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: folder.path(file)))
            for secret in SampleGrants.secrets(of: grant) where bytes.contains(secret.bytes) {
                found.append("\(file) holds the \(secret.what)")
            }
            let mode = try #require(ScratchFolder.mode(of: folder.path(file)))
            if mode & 0o077 != 0 { found.append("\(file) has mode \(String(mode & 0o777, radix: 8))") }
        }
        return found
    }

    private func saved(_ backendName: String, _ grant: TokenGrant) throws -> ScratchFolder {
        let backend = try #require(StorageBackendCatalog.named(backendName))
        let folder = try ScratchFolder()
        let storage = try backend.make(directory: folder.path)
        try storage.save(SampleGrants.grant("overwritten"))
        try storage.save(grant)
        return folder
    }

    #if Storage
    @Test("the encrypted backend leaves no token or user-id bytes and no readable files")
    func encryptedHoldsNothingInClear() throws {
        let grant = SampleGrants.grant()
        let folder = try saved("encrypted-file", grant)
        #expect(try findings(in: folder, after: grant) == [])
        // Nor the grant saved before it.
        #expect(try findings(in: folder, after: SampleGrants.grant("overwritten")) == [])
        for subfolder in ["key", "data"] {
            #expect(ScratchFolder.mode(of: folder.path(subfolder)).map { $0 & 0o777 } == 0o700)
        }
    }
    #endif

    @Test("the plaintext backend keeps the refresh token in clear, in an owner-only file")
    func jsonFileIsPlaintext() throws {
        let grant = SampleGrants.grant()
        let folder = try saved("json-file", grant)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: folder.path("session.json")))
        #expect(bytes.contains(Data(grant.refreshToken.value.utf8)))
        #expect(bytes.contains(Data(grant.accessToken.subject.rawValue.utf8)))
        #expect(ScratchFolder.mode(of: folder.path("session.json")).map { $0 & 0o777 } == 0o600)
    }

    #if Storage
    @Test("the leaky backend is caught: user id and access token in clear, files readable by others")
    func leakyIsCaught() throws {
        let grant = SampleGrants.grant()
        let folder = try saved("encrypted-file-leaky", grant)
        let found = try findings(in: folder, after: grant)
        #expect(found.contains("data/session.sealed.json holds the subject"))
        #expect(found.contains("data/session.sealed.json holds the access token"))
        #expect(found.contains("data/session.sealed.json has mode 644"))
        #expect(found.contains("key/session.key has mode 644"))
        // Only the refresh token was sealed.
        #expect(!found.contains("data/session.sealed.json holds the refresh token"))
        #expect(!found.contains("data/session.sealed.json holds the refresh token marker"))
    }
    #endif
}
