#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import SessionContract

/// The system calls the backends are built from, each retried on `EINTR` and reporting failure as
/// an `errno` value or a ``StorageError`` that names a file, never what is in it.
///
/// Every call that changes what is on disk (a file created, written, synced, its mode set,
/// renamed, linked, unlinked; a folder made) goes through here, and here a ``StorageFault`` set
/// for its folder fails it as the kernel would.
///
/// Kept apart from ``AtomicFile`` so the deliberately non-atomic backend can reuse the same
/// careful byte loop while skipping the steps that make a replacement atomic.
public enum FileSystem {
    /// The last path component: what error messages name.
    static func name(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// The folder holding `path`: where its temporary file goes and what is synced after a rename.
    static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// `path` and `name` joined with one slash.
    static func join(_ path: String, _ name: String) -> String {
        path.hasSuffix("/") ? path + name : path + "/" + name
    }

    /// The text of an `errno` value, with its name where it is one a disk gives
    /// (`No space left on device (ENOSPC)`): how every storage error says the system's cause.
    public static func message(_ code: Int32) -> String {
        let text = String(cString: strerror(code))
        return errnoNames[code].map { "\(text) (\($0))" } ?? text
    }

    /// The names of the `errno` values a storage call may meet.
    static let errnoNames: [Int32: String] = [
        ENOSPC: "ENOSPC", EIO: "EIO", EDQUOT: "EDQUOT", EROFS: "EROFS", EFBIG: "EFBIG", EACCES: "EACCES",
        EPERM: "EPERM", ENOENT: "ENOENT", ENOTDIR: "ENOTDIR", EISDIR: "EISDIR", EEXIST: "EEXIST",
        EMFILE: "EMFILE", ENFILE: "ENFILE", ENAMETOOLONG: "ENAMETOOLONG", EXDEV: "EXDEV", EBUSY: "EBUSY",
        ENOMEM: "ENOMEM",
    ]

    /// A write failure naming `path`'s file and the `errno` cause.
    static func writeFailed(_ path: String, _ code: Int32) -> StorageError {
        .writeFailed("\(name(of: path)): \(message(code))")
    }

    /// Opens `path`, retrying on `EINTR`; the descriptor, or `-errno`. An open that creates the
    /// file is a write.
    static func open(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
        if StorageFault.isSet, StorageFault.creates(path, flags: flags) {
            let code = StorageFault.write(at: path)
            if code != 0 { return -code }
        }
        while true {
            #if canImport(Glibc)
            let fd = Glibc.open(path, flags, mode)
            #else
            let fd = Darwin.open(path, flags, mode)
            #endif
            if fd >= 0 { return fd }
            if errno != EINTR { return -errno }
        }
    }

    /// Writes every byte of `bytes` to `fd`, the file at `path`, looping on partial writes and
    /// `EINTR`; 0 or the `errno`.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) -> Int32 {
        guard let base = bytes.baseAddress else { return 0 }
        var offset = 0
        while offset < bytes.count {
            let (allowed, fault) = StorageFault.data(at: path, count: bytes.count - offset)
            if fault != 0 { return fault }
            #if canImport(Glibc)
            let written = Glibc.write(fd, base + offset, allowed)
            #else
            let written = Darwin.write(fd, base + offset, allowed)
            #endif
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            // A regular file never accepts zero bytes of a non-empty write; treat it as an I/O error
            // rather than spin.
            if written == 0 { return EIO }
            offset += written
        }
        return 0
    }

    /// Flushes `fd`, the file or folder at `path`, to stable storage; 0 or the `errno`.
    static func sync(_ fd: Int32, path: String) -> Int32 {
        let fault = StorageFault.write(at: path)
        if fault != 0 { return fault }
        while fsync(fd) != 0 {
            if errno != EINTR { return errno }
        }
        return 0
    }

    /// Makes a rename, link or unlink inside `folder` durable by syncing the folder itself.
    ///
    /// `EINVAL` is accepted: it means the file system cannot sync folders, so there is nothing
    /// more that can be done for durability.
    static func syncFolder(_ folder: String, naming path: String) throws(StorageError) {
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw writeFailed(path, -fd) }
        let code = sync(fd, path: folder)
        close(fd)
        guard code == 0 || code == EINVAL else { throw writeFailed(path, code) }
    }

    /// Every byte of `path`, or `nil` when it does not exist.
    static func readAll(_ path: String) throws(StorageError) -> Data? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd == -ENOENT { return nil }
        guard fd >= 0 else { throw .unreadable("\(name(of: path)): \(message(-fd))") }
        defer { close(fd) }
        var contents = Data()
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { buffer in
                #if canImport(Glibc)
                Glibc.read(fd, buffer.baseAddress, buffer.count)
                #else
                Darwin.read(fd, buffer.baseAddress, buffer.count)
                #endif
            }
            if count == 0 { return contents }
            if count < 0 {
                if errno == EINTR { continue }
                throw .unreadable("\(name(of: path)): \(message(errno))")
            }
            contents.append(contentsOf: chunk[..<count])
        }
    }

    /// Creates `path` with `mode`, syncing it into its parent; an existing folder is left as it
    /// is. The parent must exist: a folder that was removed (a run's storage root, taken away
    /// when the run is stopped) is never made again by a store that saves after it.
    static func makeFolder(_ path: String, mode: mode_t) throws(StorageError) {
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) {
            guard isFolder.boolValue else { throw writeFailed(path, ENOTDIR) }
            return
        }
        let parent = folder(of: path)
        let code = mutate(path) { mkdir(path, mode) }
        guard code == 0 || code == EEXIST else { throw writeFailed(path, code) }
        try syncFolder(parent, naming: path)
    }

    /// Sets the mode of `fd`, the file at `path`; 0 or the `errno`.
    static func setMode(_ fd: Int32, _ mode: mode_t, path: String) -> Int32 {
        mutate(path) { fchmod(fd, mode) }
    }

    /// Renames `source` to `target`, replacing it; 0 or the `errno`.
    static func rename(_ source: String, to target: String) -> Int32 {
        mutate(target) {
            #if canImport(Glibc)
            Glibc.rename(source, target)
            #else
            Darwin.rename(source, target)
            #endif
        }
    }

    /// Makes `target` a second name of `source`, failing if `target` exists; 0 or the `errno`.
    static func link(_ source: String, to target: String) -> Int32 {
        mutate(target) {
            #if canImport(Glibc)
            Glibc.link(source, target)
            #else
            Darwin.link(source, target)
            #endif
        }
    }

    /// Removes the name `path`; 0 or the `errno`.
    static func unlink(_ path: String) -> Int32 {
        mutate(path) {
            #if canImport(Glibc)
            Glibc.unlink(path)
            #else
            Darwin.unlink(path)
            #endif
        }
    }

    /// Runs `call`, a system call changing `path` that returns 0 or -1 with `errno`, unless a
    /// fault fails it first; 0 or the `errno`.
    private static func mutate(_ path: String, _ call: () -> Int32) -> Int32 {
        let fault = StorageFault.write(at: path)
        if fault != 0 { return fault }
        while call() != 0 {
            if errno != EINTR { return errno }
        }
        return 0
    }
}
