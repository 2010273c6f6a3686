import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The real thing beside the fault seam: a small tmpfs, filled to leave 0, 4 KiB or 40 KiB, as
/// the tool's TMPDIR. No run of a scenario over storage is a finding against the store: with 0 or
/// 4 KiB free every one is an error naming ENOSPC (a second save needs a page beside the first);
/// with 40 KiB a SQLite database (its shared-memory file alone takes 32 KiB) does not fit and is
/// an error too, while a file backend's run that fits may pass — having done every restart and
/// save, or its own figures would make it an error. Nothing is left on the tmpfs but the file
/// that fills it. Mounting needs root (CI runs as root); where it is refused, or under
/// ThreadSanitizer, the suite is skipped, saying why.
@Suite(
    "A full disk under TMPDIR", .tags(.slow), .skippedInQuickRun, .serialized, .timeLimit(.minutes(30)),
    .enabled(if: SmallTmpfs.refusal == nil, Comment(rawValue: SmallTmpfs.refusal ?? "")))
struct FullDiskTests {
    /// A run as the JSON output gives it: the fields these checks read.
    typealias Result = StorageFaultRunTests.Result

    @Test("0, 4 KiB or 40 KiB free: no storage scenario on any backend is a finding, what does not fit is an error naming ENOSPC, and nothing is left behind", arguments: [0, 4096, 40960])
    func fullDisk(free: Int) async throws {
        let tmpfs = try SmallTmpfs(bytes: 1 << 20, free: free)
        defer { tmpfs.unmount() }
        let scratch = try ToolProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let file = scratch.appendingPathComponent("results.json")
        let run = try await ToolProcess.run(
            [
                "compare", "--stores", "mutex,lock-free-read", "--scenario", "crash-restart,crash-restart-grace,shared-storage",
                "--output", file.path, "--quiet",
            ],
            environment: ["TMPDIR": tmpfs.path], timeout: 600)
        struct Report: Decodable { let results: [Result] }
        let results = try JSONDecoder().decode(Report.self, from: Data(contentsOf: file)).results
        #expect(run.status == 1, "runs in error fail the command: \(run.stderr)")
        #expect(!results.isEmpty)
        for result in results {
            let context = "\(result.store) × \(result.scenario) with \(free) bytes free"
            let fits = free >= 40960 && !result.scenario.contains(":sqlite")
            #expect(result.verdict == "error" || (fits && result.verdict == "pass"), "\(context): \(result.verdict)")
            #expect(result.violations.isEmpty, "\(context): \(result.violations)")
            guard result.verdict == "error" else { continue }
            #expect(result.failure?.contains("(ENOSPC)") == true, "\(context): \(result.failure ?? "no failure")")
        }
        #expect(try tmpfs.leftBehind() == [], "nothing but the filler on the tmpfs")
    }

    @Test("4 KiB free, shared-storage again and again: a holder whose save the disk refused never leaves the others waiting on it")
    func sharedStorageOnAFullDisk() async throws {
        let tmpfs = try SmallTmpfs(bytes: 1 << 20, free: 4096)
        defer { tmpfs.unmount() }
        let scratch = try ToolProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let file = scratch.appendingPathComponent("results.json")
        // The session saved, one page; the first refresh's save needs a second: one instance
        // fails it while the other instance of its process, or of the other, waits for the lock.
        let run = try await ToolProcess.run(
            [
                "compare", "--stores", "lock-free-read,mutex,nslock,barrier-queue,serial-queue", "--scenario",
                "shared-storage:json-file,shared-storage:encrypted-file", "--repeats", "3", "--output", file.path, "--quiet",
            ],
            environment: ["TMPDIR": tmpfs.path], timeout: 600)
        struct Report: Decodable { let results: [Result] }
        let results = try JSONDecoder().decode(Report.self, from: Data(contentsOf: file)).results
        #expect(run.status == 1, "\(run.stderr)")
        #expect(results.count == 30)
        for result in results {
            #expect(result.verdict == "error", "\(result.store) × \(result.scenario): \(result.verdict) \(result.failure ?? "")")
            #expect(result.failure?.contains("(ENOSPC)") == true, "\(result.failure ?? "no failure")")
        }
        #expect(try tmpfs.leftBehind() == [])
    }
}

/// A tmpfs of its own, mounted on a fresh folder and filled to leave `free` bytes.
struct SmallTmpfs {
    let path: String
    static let filler = "filler"

    init(bytes: Int, free: Int) throws {
        let folder = try ToolProcess.temporaryDirectory().path
        if let why = Self.mount(folder, bytes: bytes) {
            try? FileManager.default.removeItem(atPath: folder)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: why])
        }
        path = folder
        // Filled a page at a time until what is left is `free`: tmpfs counts whole pages.
        let fd = open(folder + "/" + Self.filler, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        defer { close(fd) }
        let page = [UInt8](repeating: 0x5A, count: 4096)
        while Self.available(folder) > free {
            guard page.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == page.count else { break }
        }
        #expect(Self.available(folder) == free, "filled to leave \(free) bytes")
    }

    /// The paths on the tmpfs other than the filler.
    func leftBehind() throws -> [String] {
        (FileManager.default.subpaths(atPath: path) ?? []).filter { $0 != Self.filler }
    }

    func unmount() {
        if umount2(path, 0) != 0 { umount2(path, Int32(MNT_DETACH)) }
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Bytes the file system at `path` has free for this user.
    static func available(_ path: String) -> Int {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return -1 }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }

    /// Mounts a tmpfs of `bytes` on `folder`; why not, or `nil`.
    static func mount(_ folder: String, bytes: Int) -> String? {
        #if os(Linux)
            guard Glibc.mount("tmpfs", folder, "tmpfs", 0, "size=\(bytes),mode=0700") == 0 else {
                return "mounting a tmpfs was refused (\(String(cString: strerror(errno)))): this suite needs root, as CI has"
            }
            return nil
        #else
            return "a tmpfs is Linux's"
        #endif
    }

    /// Why a tmpfs cannot be mounted here, or `nil` when it can (tried once, on a folder of its own).
    static let refusal: String? = {
        // The instrumented tool cannot start there: ThreadSanitizer's runtime faults (SIGBUS in a
        // dispatch worker) when TMPDIR is full, before the tool's own code runs. The fault seam's
        // suite runs under it; this one runs in the plain build.
        if TestEnvironment.isThreadSanitized {
            return "ThreadSanitizer's runtime faults when TMPDIR is full, before the tool runs; it runs in the plain build"
        }
        guard let folder = try? ToolProcess.temporaryDirectory().path else { return "no temporary folder" }
        defer { try? FileManager.default.removeItem(atPath: folder) }
        if let why = mount(folder, bytes: 64 * 1024) { return why }
        umount2(folder, 0)
        return nil
    }()
}
