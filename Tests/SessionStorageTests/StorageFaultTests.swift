import Foundation
import SessionContract
import SessionStorage
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A disk that fills up or fails at any write: every backend reports it, at every write of a
/// session's life (made, signed in, refreshed, signed out, signed in again), as a failed write
/// naming the system's cause, and what it leaves reads back as before or as after the failed call.
///
/// The fault is the process's, so the suite runs one test at a time; it touches only its own folder.
@Suite("A storage fault at every write", .serialized)
struct StorageFaultTests {
    static let folderBackends = StorageBackendCatalog.all.filter { !$0.isServer }

    /// One step of a session's life over a storage: a save of the grant, or a clear (`nil`);
    /// what the storage holds once it returned.
    struct Step: Sendable {
        let name: String
        let after: TokenGrant?

        func run(_ storage: any TokenStorage) throws(StorageError) {
            if let after { try storage.save(after) } else { try storage.clear() }
        }
    }

    static let steps: [Step] = [
        Step(name: "sign-in save", after: SampleGrants.grant("a", generation: 1)),
        Step(name: "refresh save", after: SampleGrants.grant("b", generation: 2)),
        Step(name: "sign-out clear", after: nil),
        Step(name: "sign-in save again", after: SampleGrants.grant("c", generation: 3)),
    ]

    /// What a run of the steps under a fault did.
    struct Outcome {
        /// The step that failed (0 is making the storage), and its error; `nil` when none did.
        var failed: (step: Int, error: StorageError)?
        /// Writes the calls made (not those of letting the storage go: SQLite's checkpoint as its
        /// last connection closes, which no call waits for).
        var writes = 0
    }

    /// Makes a storage on `folder` and runs the steps until one fails.
    static func live(_ backend: StorageBackend, in folder: String) -> Outcome {
        let storage: any TokenStorage
        do throws(StorageError) { storage = try backend.make(directory: folder) } catch {
            return Outcome(failed: (0, error), writes: StorageFault.writesSeen)
        }
        for (index, step) in steps.enumerated() {
            do throws(StorageError) { try step.run(storage) } catch {
                return Outcome(failed: (index + 1, error), writes: StorageFault.writesSeen)
            }
        }
        return Outcome(writes: StorageFault.writesSeen)
    }

    /// How many writes a session's life makes on `backend`, counted under a fault that never comes.
    static func writes(_ backend: StorageBackend) throws -> Int {
        let folder = try ScratchFolder()
        StorageFault.inject(StorageFault(ENOSPC, .write(.max), under: folder.path))
        defer { StorageFault.inject(nil) }
        let outcome = live(backend, in: folder.path)
        #expect(outcome.failed == nil, "no fault, no failure")
        return outcome.writes
    }

    /// The generation the storage on `folder` holds with no fault, or `nil` when it holds none.
    static func stored(_ backend: StorageBackend, in folder: String) throws -> UInt64? {
        try backend.make(directory: folder).load()?.accessToken.generation
    }

    @Test("ENOSPC and EIO at each write of a session's life: the call fails naming the cause, and the storage holds what it held before or after it", arguments: folderBackends)
    func everyWriteFails(backend: StorageBackend) throws {
        let count = try Self.writes(backend)
        #expect(count >= 8, "a session's life writes: \(count)")
        for code in [ENOSPC, EIO] {
            let name = code == ENOSPC ? "ENOSPC" : "EIO"
            for write in 1...count {
                let folder = try ScratchFolder()
                let directory = folder.path
                StorageFault.inject(StorageFault(code, .write(write), under: folder.path))
                let outcome = Self.live(backend, in: directory)
                StorageFault.inject(nil)
                let context = "\(backend.name), \(name) at write \(write) of \(count)"
                guard let (step, error) = outcome.failed else {
                    Issue.record("\(context): every call returned as if written")
                    continue
                }
                guard case .writeFailed(let why) = error else {
                    Issue.record("\(context): \(error), not a failed write")
                    continue
                }
                #expect(why.contains("(\(name))"), "\(context): \(why)")
                #expect(!why.contains("marker"), "no secret in the error: \(why)")
                // A broken backend tears its file by design; the correct ones never lose both.
                guard !backend.isReferenceBroken, step > 0 else { continue }
                let before = step >= 2 ? Self.steps[step - 2].after : nil
                let after = Self.steps[step - 1].after
                let held = try Self.stored(backend, in: directory)
                #expect(
                    held == before?.accessToken.generation || held == after?.accessToken.generation,
                    "\(context): failed in \(Self.steps[step - 1].name), the storage holds generation \(held.map(String.init) ?? "none")")
            }
        }
    }

    @Test("a disk that fills up after 0, 1, 100 or 1000 bytes fails the call that meets it with ENOSPC", arguments: folderBackends)
    func diskFillsUp(backend: StorageBackend) throws {
        for bytes in [0, 1, 100, 1000] {
            let folder = try ScratchFolder()
            StorageFault.inject(StorageFault(ENOSPC, .bytes(bytes), under: folder.path))
            let outcome = Self.live(backend, in: folder.path)
            StorageFault.inject(nil)
            guard case .writeFailed(let why)? = outcome.failed?.error else {
                Issue.record("\(backend.name), full after \(bytes) bytes: \(String(describing: outcome.failed))")
                continue
            }
            #expect(why.contains("(ENOSPC)"), "\(backend.name), full after \(bytes) bytes: \(why)")
        }
    }

    #if Storage
        @Test(
            "a database that cannot be opened for want of room or for a failing disk is a failed write, never an unreadable session",
            arguments: StorageBackendCatalog.all.filter { $0.name.hasPrefix("sqlite") })
        func databaseThatCannotOpen(backend: StorageBackend) throws {
            let folder = try ScratchFolder()
            // Saved and let go: the last connection's close folds the log into the database and
            // removes it, so the next open makes it again.
            try backend.make(directory: folder.path).save(SampleGrants.grant())
            for code in [ENOSPC, EIO] {
                StorageFault.inject(StorageFault(code, .write(1), under: folder.path))
                defer { StorageFault.inject(nil) }
                let error = #expect(throws: StorageError.self) { try backend.make(directory: folder.path).load() }
                guard case .writeFailed(let why)? = error else {
                    Issue.record("\(backend.name): \(String(describing: error)), not a failed write")
                    continue
                }
                #expect(why.contains(code == ENOSPC ? "(ENOSPC)" : "(EIO)"), "\(why)")
            }
            #expect(try backend.make(directory: folder.path).load()?.refreshToken == SampleGrants.grant().refreshToken)
        }
    #endif

    @Test("a fault touches only its own folder")
    func onlyItsFolder() throws {
        let faulty = try ScratchFolder()
        let healthy = try ScratchFolder()
        StorageFault.inject(StorageFault(EIO, .write(1), under: faulty.path))
        defer { StorageFault.inject(nil) }
        for backend in Self.folderBackends {
            try FileManager.default.createDirectory(atPath: healthy.path(backend.name), withIntermediateDirectories: false)
            #expect(Self.live(backend, in: healthy.path(backend.name)).failed == nil, "\(backend.name)")
        }
        #expect(StorageFault.writesSeen == 0)
    }

    @Test("a fault reads from its text and back; other text is no fault")
    func text() {
        #expect(StorageFault("ENOSPC:write:3:/tmp/a:b") == StorageFault(ENOSPC, .write(3), under: "/tmp/a:b"))
        #expect(StorageFault("EIO:bytes:4096:/tmp/x/") == StorageFault(EIO, .bytes(4096), under: "/tmp/x"))
        #expect(StorageFault(EIO, .bytes(4096), under: "/tmp/x").description == "EIO:bytes:4096:/tmp/x")
        for bad in ["", "ENOSPC", "ENOSPC:write:3", "EPIPE:write:3:/tmp", "ENOSPC:often:3:/tmp", "ENOSPC:write:-1:/tmp",
            "ENOSPC:write:3:relative"]
        {
            #expect(StorageFault(bad) == nil, "\(bad)")
        }
    }
}
