import Foundation
import SessionContract
import SessionStorage
import Testing

/// What every backend, broken ones included, must do when nothing fails: the broken ones are wrong
/// only under a crash or at rest, so these tests pass for all of them.
@Suite("Every backend round-trips")
struct StorageBackendTests {
    @Test("the catalog lists the backends in report order")
    func catalog() {
        #if Storage
            #expect(
                StorageBackendCatalog.all.map(\.name)
                    == [
                        "json-file", "encrypted-file", "sqlite", "sqlite-sealed", "json-file-in-place",
                        "encrypted-file-leaky", "sqlite-plain-delete",
                    ])
            #expect(StorageBackendCatalog.correct.map(\.name) == ["json-file", "encrypted-file", "sqlite", "sqlite-sealed"])
            #expect(StorageBackendCatalog.named("sqlite-sealed")?.protectsAtRest == true)
            #expect(StorageBackendCatalog.named("encrypted-file")?.protectsAtRest == true)
            #expect(StorageBackendCatalog.named("encrypted-file-leaky")?.isReferenceBroken == true)
            #expect(StorageBackendCatalog.named("sqlite-plain-delete")?.isReferenceBroken == true)
            #expect(StorageBackendCatalog.leftOut(named: "sqlite") == nil)
        #else
            #expect(StorageBackendCatalog.all.map(\.name) == ["json-file", "json-file-in-place"])
            // Left out of this build, and asking for one says which trait brings it.
            let sealed = StorageBackendCatalog.leftOut(named: "encrypted-file")
            #expect(sealed?.trait == "Storage")
            #expect(sealed?.remedy.contains("--traits Storage") == true)
            #expect(StorageBackendCatalog.named("encrypted-file") == nil)
        #endif
        #expect(StorageBackendCatalog.named("json-file")?.protectsAtRest == false)
        #expect(StorageBackendCatalog.named("floppy") == nil && StorageBackendCatalog.leftOut(named: "floppy") == nil)
    }

    @Test("a fresh folder holds no session", arguments: StorageBackendCatalog.all)
    func freshFolderLoadsNil(backend: StorageBackend) throws {
        let folder = try ScratchFolder()
        #expect(try backend.make(directory: folder.path).load() == nil)
    }

    @Test("a saved grant loads back field for field", arguments: StorageBackendCatalog.all)
    func roundTrip(backend: StorageBackend) throws {
        let folder = try ScratchFolder()
        let storage = try backend.make(directory: folder.path)
        for grant in [SampleGrants.grant(), SampleGrants.awkward] {
            try storage.save(grant)
            let loaded = try #require(try storage.load())
            #expect(loaded.accessToken.value == grant.accessToken.value)
            #expect(loaded.accessToken.subject == grant.accessToken.subject)
            #expect(loaded.accessToken.generation == grant.accessToken.generation)
            #expect(loaded.accessToken.expiresAt == grant.accessToken.expiresAt)
            #expect(loaded.refreshToken == grant.refreshToken)
        }
    }

    @Test(
        "a folder that was removed is never made again: a storage made there fails, a save leaves nothing",
        arguments: StorageBackendCatalog.all.filter { !$0.isServer })
    func removedFolderStaysRemoved(backend: StorageBackend) throws {
        let folder = try ScratchFolder()
        let root = folder.path("root"), run = folder.path("root/run")
        try FileManager.default.createDirectory(atPath: run, withIntermediateDirectories: true)
        let storage = try backend.make(directory: run)
        try storage.save(SampleGrants.grant("before"))
        // A run's storage root taken away while a store still saves into it, and another made.
        try FileManager.default.removeItem(atPath: root)
        // A file backend fails; SQLite may write on into the removed file it holds open.
        _ = try? storage.save(SampleGrants.grant("after"))
        #expect(throws: StorageError.self) { try backend.make(directory: run).save(SampleGrants.grant("after")) }
        #expect(try folder.entries() == [])
    }

    @Test("a storage made again on the same folder restores the session", arguments: StorageBackendCatalog.all)
    func restart(backend: StorageBackend) throws {
        let folder = try ScratchFolder()
        try backend.make(directory: folder.path).save(SampleGrants.grant("before-restart"))
        #expect(try backend.make(directory: folder.path).load() == SampleGrants.grant("before-restart"))
    }

    @Test("the second save replaces the first", arguments: StorageBackendCatalog.all)
    func saveTwice(backend: StorageBackend) throws {
        let folder = try ScratchFolder()
        let storage = try backend.make(directory: folder.path)
        try storage.save(SampleGrants.grant("first", generation: 1))
        try storage.save(SampleGrants.grant("second", generation: 2))
        #expect(try storage.load() == SampleGrants.grant("second", generation: 2))
    }

    @Test("clear removes the session, and clearing nothing is fine", arguments: StorageBackendCatalog.all)
    func clear(backend: StorageBackend) throws {
        let folder = try ScratchFolder()
        let storage = try backend.make(directory: folder.path)
        try storage.clear()
        try storage.save(SampleGrants.grant())
        try storage.clear()
        #expect(try storage.load() == nil)
        #expect(try backend.make(directory: folder.path).load() == nil)
        try storage.clear()
        try storage.save(SampleGrants.grant("after-clear"))
        #expect(try storage.load() == SampleGrants.grant("after-clear"))
    }

    @Test("saves leave only the backend's own files behind", arguments: StorageBackendCatalog.all)
    func noStrayFiles(backend: StorageBackend) throws {
        let folder = try ScratchFolder()
        let storage = try backend.make(directory: folder.path)
        for generation in 1...5 { try storage.save(SampleGrants.grant(generation: UInt64(generation))) }
        let expected: [String] =
            switch backend.name {
            case "json-file", "json-file-in-place": ["session.json"]
            case "encrypted-file": ["data/session.sealed", "key/session.key"]
            case "sqlite", "sqlite-plain-delete": ["session.sqlite", "session.sqlite-shm", "session.sqlite-wal"]
            case "sqlite-sealed":
                ["data/session.sqlite", "data/session.sqlite-shm", "data/session.sqlite-wal", "key/session.key"]
            default: ["data/session.sealed.json", "key/session.key"]
            }
        #expect(folder.files() == expected)
    }
}
