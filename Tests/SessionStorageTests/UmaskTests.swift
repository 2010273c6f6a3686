#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import SessionContract
import SessionStorage
import Testing

/// File modes do not depend on the process's umask. The umask is process-wide, so these tests run
/// one at a time and restore it; no other test depends on it (every mode checked elsewhere is set
/// with `fchmod`, which the umask does not touch).
@Suite("Modes ignore the umask", .serialized)
struct UmaskTests {
    @Test("a file gets exactly the mode asked for, whatever the umask or the old file's mode")
    func exactMode() throws {
        let folder = try ScratchFolder()
        let path = folder.path("target")
        try Data("old".utf8).write(to: URL(fileURLWithPath: path))
        #expect(chmod(path, 0o666) == 0)
        try AtomicFile.write(Data("new".utf8), to: path)
        #expect(ScratchFolder.mode(of: path).map { $0 & 0o777 } == 0o600)
        let previous = umask(0o077)
        defer { umask(previous) }
        try AtomicFile.write(Data("new".utf8), to: path, mode: 0o644)
        #expect(ScratchFolder.mode(of: path).map { $0 & 0o777 } == 0o644)
    }

    #if Storage
    @Test("the encrypted backend's files stay owner-only under a permissive umask")
    func encryptedIgnoresUmask() throws {
        let previous = umask(0)
        defer { umask(previous) }
        let folder = try ScratchFolder()
        let backend = try #require(StorageBackendCatalog.named("encrypted-file"))
        try backend.make(directory: folder.path).save(SampleGrants.grant())
        #expect(folder.files() == ["data/session.sealed", "key/session.key"])
        for path in ["data", "key", "data/session.sealed", "key/session.key"] {
            #expect(ScratchFolder.mode(of: folder.path(path)).map { $0 & 0o077 } == 0, "\(path)")
        }
    }
    #endif
}
