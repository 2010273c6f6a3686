import Foundation
import SessionContract
import SessionStorage
import Testing

@Suite("AtomicFile")
struct AtomicFileTests {
    @Test("write replaces the contents and leaves no temporary file")
    func writeReplaces() throws {
        let folder = try ScratchFolder()
        let path = folder.path("target")
        try AtomicFile.write(Data("first".utf8), to: path)
        try AtomicFile.write(Data("second, longer".utf8), to: path)
        #expect(try AtomicFile.read(path) == Data("second, longer".utf8))
        #expect(try folder.entries() == ["target"])
        try AtomicFile.write(Data(), to: path)
        #expect(try AtomicFile.read(path) == Data())
        let large = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try AtomicFile.write(large, to: path)
        #expect(try AtomicFile.read(path) == large)
        #expect(try folder.entries() == ["target"])
    }

    @Test("writing into a missing folder fails naming the file, not the contents")
    func missingFolder() throws {
        let folder = try ScratchFolder()
        let error = #expect(throws: StorageError.self) {
            try AtomicFile.write(Data("secret-contents".utf8), to: folder.path("absent/target"))
        }
        guard case .writeFailed(let why) = error else {
            Issue.record("expected writeFailed, got \(String(describing: error))")
            return
        }
        #expect(why.hasPrefix("target: "))
        #expect(!why.contains("secret-contents"))
        #expect(try folder.entries() == [])
    }

    @Test("a failed rename removes its temporary file and keeps the target")
    func failedRename() throws {
        let folder = try ScratchFolder()
        // A non-empty folder where the file should go: the temporary file is written, the rename fails.
        try FileManager.default.createDirectory(atPath: folder.path("target/inner"), withIntermediateDirectories: true)
        #expect(throws: StorageError.self) { try AtomicFile.write(Data("contents".utf8), to: folder.path("target")) }
        #expect(try folder.entries() == ["target"])
        #expect(FileManager.default.fileExists(atPath: folder.path("target/inner")))
    }

    @Test("read is nil for a missing file and unreadable for a folder")
    func read() throws {
        let folder = try ScratchFolder()
        #expect(try AtomicFile.read(folder.path("absent")) == nil)
        #expect(try AtomicFile.read(folder.path("absent/deeper")) == nil)
        #expect(throws: StorageError.self) { try AtomicFile.read(folder.path) }
    }

    @Test("remove deletes the file; a missing file or folder is fine")
    func remove() throws {
        let folder = try ScratchFolder()
        try AtomicFile.write(Data("x".utf8), to: folder.path("target"))
        try AtomicFile.remove(folder.path("target"))
        #expect(try folder.entries() == [])
        try AtomicFile.remove(folder.path("target"))
        try AtomicFile.remove(folder.path("absent/target"))
    }

    @Test("createIfAbsent creates once and never replaces")
    func createIfAbsent() throws {
        let folder = try ScratchFolder()
        let path = folder.path("key")
        #expect(try AtomicFile.createIfAbsent(Data("one".utf8), at: path))
        #expect(try !AtomicFile.createIfAbsent(Data("two".utf8), at: path))
        #expect(try AtomicFile.read(path) == Data("one".utf8))
        #expect(try folder.entries() == ["key"])
    }

    @Test("concurrent writers never leave a mix or a temporary file")
    func concurrentWriters() async throws {
        let folder = try ScratchFolder()
        let path = folder.path("target")
        let contents = (0..<8).map { Data(String(repeating: Character(String($0)), count: 10_000 + $0).utf8) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for data in contents {
                group.addTask { for _ in 0..<20 { try AtomicFile.write(data, to: path) } }
            }
            try await group.waitForAll()
        }
        #expect(try contents.contains(#require(try AtomicFile.read(path))))
        #expect(try folder.entries() == ["target"])
    }
}
