#if Storage
import Foundation
import SessionContract
import SessionStorage
import Testing

/// The SQLite backend: damage is reported, never read as "no session"; sign-out leaves none of
/// the ended session in the database's files; the plain-DELETE variant shows why that matters.
@Suite("SQLite storage")
struct SQLiteStorageTests {
    /// The storage on `folder`, its row sealed with a key in `<folder>/key` or plain.
    private func storage(_ folder: ScratchFolder, sealed: Bool) throws(StorageError) -> SQLiteStorage {
        try SQLiteStorage(directory: folder.path, keyDirectory: sealed ? folder.path("key") : nil)
    }

    private func expectUnreadable(_ folder: ScratchFolder, sealed: Bool) {
        do throws(StorageError) {
            _ = try storage(folder, sealed: sealed).load()
            Issue.record("a damaged database loaded")
        } catch {
            guard case .unreadable = error else {
                Issue.record("expected unreadable, got \(error)")
                return
            }
        }
    }

    @Test(
        "a database overwritten with garbage, or cut in half, is unreadable, sealed or not", arguments: [false, true])
    func damage(sealed: Bool) throws {
        for cut in [false, true] {
            let folder = try ScratchFolder()
            // Saved, and the connection let go, so the log is checkpointed into the database.
            try storage(folder, sealed: sealed).save(SampleGrants.grant())
            let path = folder.path(SQLiteStorage.fileName)
            let whole = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(whole.count >= 4096, "the log was checkpointed into the file")
            let damaged = cut ? whole.prefix(whole.count / 2) : Data(repeating: 0xA5, count: whole.count)
            try damaged.write(to: URL(fileURLWithPath: path))
            expectUnreadable(folder, sealed: sealed)
        }
    }

    @Test("sign-out leaves none of the session in the files; a plain DELETE leaves its refresh token")
    func clearErases() throws {
        for erases in [true, false] {
            let folder = try ScratchFolder()
            let grant = SampleGrants.grant()
            let storage = try SQLiteStorage(directory: folder.path, erasesOnClear: erases)
            for generation in 1...3 { try storage.save(SampleGrants.grant(generation: UInt64(generation))) }
            try storage.save(grant)
            try storage.clear()
            #expect(try storage.load() == nil)
            let bytes = folder.files().flatMap {
                (try? Data(contentsOf: URL(fileURLWithPath: folder.path($0)))) ?? Data()
            }
            let found = Array(bytes).firstRange(of: Array(grant.refreshToken.value.utf8)) != nil
            #expect(found == !erases, erases ? "secure_delete and a truncated log erase it" : "a plain DELETE keeps it")
        }
    }

    @Test("the database and its side files are the owner's alone")
    func modes() throws {
        let folder = try ScratchFolder()
        let storage = try SQLiteStorage(directory: folder.path)
        try storage.save(SampleGrants.grant())
        for file in folder.files() {
            let mode = try #require(ScratchFolder.mode(of: folder.path(file)))
            #expect(mode & 0o077 == 0, "\(file) is \(String(mode & 0o777, radix: 8))")
        }
    }

    @Test("sealed, the database and its log hold nothing of the session; damage to the box is unreadable")
    func sealed() throws {
        let folder = try ScratchFolder()
        let data = folder.path("data")
        let keys = folder.path("key")
        let grant = SampleGrants.grant()
        let storage = try SQLiteStorage(directory: data, keyDirectory: keys)
        for generation in 1...3 { try storage.save(SampleGrants.grant(generation: UInt64(generation))) }
        try storage.save(grant)
        #expect(try SQLiteStorage(directory: data, keyDirectory: keys).load() == grant)
        let bytes = Array(
            folder.files().flatMap { (try? Data(contentsOf: URL(fileURLWithPath: folder.path($0)))) ?? Data() })
        for secret in [grant.refreshToken.value, grant.accessToken.value, grant.accessToken.subject.rawValue] {
            #expect(bytes.firstRange(of: Array(secret.utf8)) == nil, "nothing of the session in clear")
        }
        // Another key does not open it: unreadable, never "no session".
        let otherKeys = folder.path("other-key")
        #expect(
            throws: StorageError.unreadable("session.sqlite: does not open (torn, tampered or sealed with another key)")
        ) {
            _ = try SQLiteStorage(directory: data, keyDirectory: otherKeys).load()
        }
    }
}
#endif
