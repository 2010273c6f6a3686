import Foundation
import SessionContract
import SessionStorage
import Testing

/// The in-place backend is wrong only under a crash: these tests crash it between its two writes
/// and show the torn file the crash-restart check must catch.
@Suite("The in-place backend tears")
struct InPlaceTornWriteTests {
    @Test("a save cut between its two writes leaves a torn file: neither the old nor the new session")
    func tornFile() throws {
        let folder = try ScratchFolder()
        let old = SampleGrants.grant("old", generation: 1)
        let new = SampleGrants.grant("new", generation: 2)
        try InPlaceJSONFileStorage(directory: folder.path).save(old)

        let crashing = try InPlaceJSONFileStorage(directory: folder.path) { () throws(StorageError) in
            throw .writeFailed("session.json: simulated crash")
        }
        #expect(throws: StorageError.writeFailed("session.json: simulated crash")) { try crashing.save(new) }

        // The file is the first half of the new record: the old one is already gone.
        let torn = try Data(contentsOf: URL(fileURLWithPath: folder.path("session.json")))
        try InPlaceJSONFileStorage(directory: folder.path).save(new)
        let whole = try Data(contentsOf: URL(fileURLWithPath: folder.path("session.json")))
        #expect(torn == whole.prefix(whole.count / 2))

        try torn.write(to: URL(fileURLWithPath: folder.path("session.json")))
        let restarted = try InPlaceJSONFileStorage(directory: folder.path)
        #expect {
            _ = try restarted.load()
        } throws: { error in
            guard case StorageError.unreadable = error else { return false }
            return true
        }
    }

    @Test("the same file written by the atomic backend is still whole, so the tear is the in-place bug")
    func atomicBackendReadsTheSameFormat() throws {
        let folder = try ScratchFolder()
        let grant = SampleGrants.grant()
        try InPlaceJSONFileStorage(directory: folder.path).save(grant)
        #expect(try JSONFileStorage(directory: folder.path).load() == grant)
        try JSONFileStorage(directory: folder.path).save(SampleGrants.grant("b"))
        #expect(try InPlaceJSONFileStorage(directory: folder.path).load() == SampleGrants.grant("b"))
    }

    @Test("a hook that returns lets the save finish")
    func hookThatReturns() throws {
        let folder = try ScratchFolder()
        let storage = try InPlaceJSONFileStorage(directory: folder.path) { () throws(StorageError) in }
        try storage.save(SampleGrants.grant())
        #expect(try storage.load() == SampleGrants.grant())
    }
}
