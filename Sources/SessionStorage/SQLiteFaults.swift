#if Storage
import GRDBSQLite

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// SQLite's file layer behind ``StorageFault``: the system calls through which SQLite's unix VFS
/// opens (creating), writes, truncates and removes files are replaced (SQLite lets a program do so, for
/// this, with `xSetSystemCall`) by ones that ask the fault first, then call SQLite's own. A call
/// on a descriptor is matched to its file through `/proc/self/fd`, so this works on Linux;
/// elsewhere SQLite's writes meet no fault.
///
/// Installed once, when a fault is first set in a process that may open a database (before any
/// connection a fault is meant for opens; the calls in place for connections open before forward
/// to SQLite's own all the same).
enum SQLiteFaults {
    typealias Open = @convention(c) (UnsafePointer<CChar>?, Int32, Int32) -> Int32
    typealias Write = @convention(c) (Int32, UnsafeRawPointer?, Int) -> Int
    typealias PositionedWrite = @convention(c) (Int32, UnsafeRawPointer?, Int, off_t) -> Int
    typealias Truncate = @convention(c) (Int32, off_t) -> Int32
    typealias Unlink = @convention(c) (UnsafePointer<CChar>?) -> Int32

    /// SQLite's own calls, read before they were replaced.
    struct Originals {
        var open: Open?
        var write: Write?
        var pwrite: PositionedWrite?
        var pwrite64: PositionedWrite?
        var ftruncate: Truncate?
        var unlink: Unlink?
    }

    /// Replaces the calls, once per process.
    static func install() { _ = installed }

    // SAFETY: written once, inside `installed`'s one-time initialization, before any replaced
    // call can run; only read afterwards.
    nonisolated(unsafe) private static var originals = Originals()

    private static let installed: Bool = {
        #if os(Linux)
            guard let vfs = sqlite3_vfs_find(nil), let get = vfs.pointee.xGetSystemCall,
                let set = vfs.pointee.xSetSystemCall
            else { return false }
            func original<F>(_ name: String, as: F.Type) -> F? {
                get(vfs, name).map { unsafeBitCast($0, to: F.self) }
            }
            originals = Originals(
                open: original("open", as: Open.self), write: original("write", as: Write.self),
                pwrite: original("pwrite", as: PositionedWrite.self),
                pwrite64: original("pwrite64", as: PositionedWrite.self),
                ftruncate: original("ftruncate", as: Truncate.self), unlink: original("unlink", as: Unlink.self))
            let replacements: [(String, sqlite3_syscall_ptr)] = [
                ("open", unsafeBitCast(faultyOpen, to: sqlite3_syscall_ptr.self)),
                ("write", unsafeBitCast(faultyWrite, to: sqlite3_syscall_ptr.self)),
                ("pwrite", unsafeBitCast(faultyPwrite, to: sqlite3_syscall_ptr.self)),
                ("pwrite64", unsafeBitCast(faultyPwrite64, to: sqlite3_syscall_ptr.self)),
                ("ftruncate", unsafeBitCast(faultyTruncate, to: sqlite3_syscall_ptr.self)),
                ("unlink", unsafeBitCast(faultyUnlink, to: sqlite3_syscall_ptr.self)),
            ]
            for (name, replacement) in replacements where get(vfs, name) != nil {
                _ = set(vfs, name, replacement)
            }
            return true
        #else
            return false
        #endif
    }()

    /// The file open on `fd`, as the system names it; `nil` if it cannot say.
    static func path(of fd: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// How many of `count` bytes a data write to `fd` may write, or `-1` with `errno` set.
    private static func allowed(_ fd: Int32, _ count: Int) -> Int {
        guard StorageFault.isSet, let path = path(of: fd) else { return count }
        let (allowed, code) = StorageFault.data(at: path, count: count)
        guard code == 0 else {
            errno = code
            return -1
        }
        return allowed
    }

    /// 0 when a write to `path` that is not data may go ahead, or `-1` with `errno` set.
    private static func permitted(_ path: String?) -> Int32 {
        guard StorageFault.isSet, let path else { return 0 }
        let code = StorageFault.write(at: path)
        guard code == 0 else {
            errno = code
            return -1
        }
        return 0
    }

    private static let faultyOpen: Open = { path, flags, mode in
        if StorageFault.isSet, let path, StorageFault.creates(String(cString: path), flags: flags),
            permitted(String(cString: path)) != 0
        {
            return -1
        }
        return originals.open!(path, flags, mode)
    }

    private static let faultyWrite: Write = { fd, buffer, count in
        let count = allowed(fd, count)
        return count < 0 ? -1 : originals.write!(fd, buffer, count)
    }

    private static let faultyPwrite: PositionedWrite = { fd, buffer, count, offset in
        let count = allowed(fd, count)
        return count < 0 ? -1 : originals.pwrite!(fd, buffer, count, offset)
    }

    private static let faultyPwrite64: PositionedWrite = { fd, buffer, count, offset in
        let count = allowed(fd, count)
        return count < 0 ? -1 : originals.pwrite64!(fd, buffer, count, offset)
    }

    private static let faultyTruncate: Truncate = { fd, length in
        permitted(StorageFault.isSet ? path(of: fd) : nil) != 0 ? -1 : originals.ftruncate!(fd, length)
    }

    private static let faultyUnlink: Unlink = { path in
        permitted(path.map { String(cString: $0) }) != 0 ? -1 : originals.unlink!(path)
    }
}
#endif
