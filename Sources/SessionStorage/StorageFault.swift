import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A disk that fills up or fails, for tests: under one folder, from the `n`th write on, or once
/// `n` bytes have been written there, writes fail with one `errno` (`ENOSPC`, a full disk; `EIO`,
/// a failing one) as the kernel would fail them. Writes anywhere else are untouched.
///
/// Every backend meets it where it meets the system, so no backend can step around it:
/// - the file backends in ``FileSystem``: each file created, `write`, `fsync` (of a file or a
///   folder), `fchmod`, `rename`, `link`, `unlink` and folder made is a write;
/// - SQLite in the system calls of its own file layer (its unix VFS, whose calls SQLite lets a
///   program replace): each file created, `write`, `pwrite`, `ftruncate` and `unlink` (SQLite's
///   own `fsync`s are not among the calls it lets a program replace, and are not reached; Linux).
///
/// ``Trigger/write(_:)`` counts every one of those; ``Trigger/bytes(_:)`` only the bytes of data
/// written, the write that would pass the limit writing what fits, the next failing: a disk that
/// fills up. Either way the fault stays once it has come: every later write fails too.
///
/// A process takes its fault from ``environmentVariable`` when it first writes, so the session
/// processes a run starts meet the same fault as the run; each process counts its own writes.
/// A test in one process sets or clears it with ``inject(_:)``.
public struct StorageFault: Sendable, Hashable, CustomStringConvertible {
    public enum Trigger: Sendable, Hashable {
        /// The `n`th write (from 1) fails, and every one after it.
        case write(Int)
        /// Data writes succeed until `n` bytes have been written; then every one fails.
        case bytes(Int)
    }

    /// The `errno` the failing writes get.
    public let code: Int32
    public let trigger: Trigger
    /// The folder whose writes fail, and everything under it.
    public let folder: String

    public init(_ code: Int32, _ trigger: Trigger, under folder: String) {
        self.code = code
        self.trigger = trigger
        self.folder = folder.count > 1 && folder.hasSuffix("/") ? String(folder.dropLast()) : folder
    }

    /// Names the fault a process takes when it first writes: ``description``'s text.
    public static let environmentVariable = "SESSION_BENCH_STORAGE_FAULT"

    /// The `errno` values a fault may name.
    public static let codes: [String: Int32] = ["ENOSPC": ENOSPC, "EIO": EIO, "EDQUOT": EDQUOT, "EROFS": EROFS]

    /// `ENOSPC:write:3:/tmp/folder` or `EIO:bytes:4096:/tmp/folder` (the folder last, so it may
    /// hold colons); `nil` for any other text.
    public init?(_ text: String) {
        let fields = text.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false)
        guard fields.count == 4, let code = Self.codes[String(fields[0])], let count = Int(fields[2]), count >= 0,
            fields[3].hasPrefix("/")
        else { return nil }
        switch fields[1] {
        case "write": self.init(code, .write(count), under: String(fields[3]))
        case "bytes": self.init(code, .bytes(count), under: String(fields[3]))
        default: return nil
        }
    }

    public var description: String {
        let name = Self.codes.first { $0.value == code }?.key ?? "\(code)"
        switch trigger {
        case .write(let count): return "\(name):write:\(count):\(folder)"
        case .bytes(let count): return "\(name):bytes:\(count):\(folder)"
        }
    }

    /// Sets the fault of this process (`nil` clears it), its counts from zero.
    public static func inject(_ fault: StorageFault?) {
        #if Storage
            if fault != nil { SQLiteFaults.install() }
        #endif
        active.withLock { $0 = fault.map(Active.init) }
    }

    /// Writes counted under the fault's folder since it was set, failed ones included: with a
    /// fault that never comes (a count past every write), how many writes an operation makes.
    public static var writesSeen: Int { active.withLock { $0?.writes ?? 0 } }

    /// Whether this process has a fault, from its environment or ``inject(_:)``.
    static var isSet: Bool { active.withLock { $0 != nil } }

    /// The `errno` writes got from the fault, once one has: what a layer that loses the cause of
    /// its failure (SQLite, which may report a failed creation as a file it cannot open) can name.
    static var failedWith: Int32? { active.withLock { $0?.failed == true ? $0?.fault.code : nil } }

    /// Whether an open of `path` with `flags` creates it: `O_CREAT` where no file is. Opening a
    /// file that is there writes nothing.
    static func creates(_ path: String, flags: Int32) -> Bool {
        flags & O_CREAT != 0 && access(path, F_OK) != 0
    }

    // MARK: Where the backends ask

    /// A write to `path` that is not data (a file created, a sync, a rename…): 0 to go ahead, or
    /// the `errno` it fails with.
    static func write(at path: String) -> Int32 {
        active.withLock { active in
            guard active != nil, active!.covers(path) else { return 0 }
            active!.writes += 1
            guard case .write(let count) = active!.fault.trigger, active!.writes >= count else { return 0 }
            active!.failed = true
            return active!.fault.code
        }
    }

    /// A data write of `count` bytes to `path`: how many of them to write, or the `errno` it fails
    /// with when none may be.
    static func data(at path: String, count: Int) -> (allowed: Int, code: Int32) {
        active.withLock { active in
            guard active != nil, active!.covers(path) else { return (count, 0) }
            active!.writes += 1
            switch active!.fault.trigger {
            case .write(let limit):
                guard active!.writes >= limit else { return (count, 0) }
                active!.failed = true
                return (0, active!.fault.code)
            case .bytes(let limit):
                let room = limit - active!.bytes
                guard room > 0 || count == 0 else {
                    active!.failed = true
                    return (0, active!.fault.code)
                }
                let allowed = min(count, room)
                active!.bytes += allowed
                return (allowed, 0)
            }
        }
    }

    private struct Active {
        let fault: StorageFault
        /// The folder as named and as the system resolves it (what a descriptor's path reads).
        let prefixes: [String]
        var writes = 0
        var bytes = 0
        var failed = false

        init(_ fault: StorageFault) {
            self.fault = fault
            var prefixes = [fault.folder]
            if let resolved = realpath(fault.folder, nil) {
                prefixes.append(String(cString: resolved))
                free(resolved)
            }
            self.prefixes = prefixes
        }

        func covers(_ path: String) -> Bool {
            prefixes.contains { path == $0 || path.hasPrefix($0 == "/" ? $0 : $0 + "/") }
        }
    }

    /// The process's fault: the environment's, until a test sets another.
    private static let active = Mutex<Active?>(
        ProcessInfo.processInfo.environment[environmentVariable].flatMap(StorageFault.init).map(Active.init))
}
