#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import SessionContract

/// Durable, all-or-nothing replacement of a file's contents.
///
/// ``write(_:to:mode:)`` writes the bytes to a new temporary file in the target's folder (created
/// with `O_CREAT | O_EXCL`, so it never reuses someone else's file), syncs it, renames it over the
/// target and syncs the folder. `rename` replaces a name atomically, so a crash at any instant
/// leaves either the old contents or the new ones, never a mix; the two syncs make the new
/// contents and the new name survive a power loss once the call returns.
///
/// Errors name the file and the system's cause, never the contents. A failed call removes its
/// temporary file, so nothing is left behind beside the target.
public enum AtomicFile {
    /// Replaces the contents of `path` with `data`; durable when it returns. The file ends with
    /// exactly `mode` (the process's umask does not apply), whether or not it existed before.
    public static func write(_ data: Data, to path: String, mode: mode_t = 0o600) throws(StorageError) {
        let temporary = try writeTemporary(data, beside: path, mode: mode)
        let code = FileSystem.rename(temporary, to: path)
        guard code == 0 else {
            // Already failing: the temporary file goes if it can; the rename's cause is the error.
            _ = FileSystem.unlink(temporary)
            throw FileSystem.writeFailed(path, code)
        }
        try FileSystem.syncFolder(FileSystem.folder(of: path), naming: path)
    }

    /// Creates `path` holding `data` only if no file has that name yet; `false` when one already
    /// did, which is then left untouched. Durable when it returns `true`.
    ///
    /// Uses `link`, which fails rather than replaces, so two processes creating the same file at
    /// once agree on a single winner (what a key file needs: one key, whoever made it). The
    /// temporary file it links from is removed, or the call fails: it is a copy of the contents.
    @discardableResult
    public static func createIfAbsent(_ data: Data, at path: String, mode: mode_t = 0o600) throws(StorageError)
        -> Bool
    {
        let temporary = try writeTemporary(data, beside: path, mode: mode)
        let linked = FileSystem.link(temporary, to: path)
        let removed = FileSystem.unlink(temporary)
        guard linked == 0 else {
            if linked == EEXIST, removed == 0 { return false }
            throw FileSystem.writeFailed(path, linked == EEXIST ? removed : linked)
        }
        guard removed == 0 else { throw FileSystem.writeFailed(path, removed) }
        try FileSystem.syncFolder(FileSystem.folder(of: path), naming: path)
        return true
    }

    /// The contents of `path`, or `nil` when there is no such file. Throws
    /// ``StorageError/unreadable(_:)`` when the file exists but cannot be read.
    public static func read(_ path: String) throws(StorageError) -> Data? {
        try FileSystem.readAll(path)
    }

    /// Removes `path` durably, with the temporary files of writes to it that a crash cut short
    /// (they may hold an older version of the contents); a missing file (or folder) is already
    /// removed and is not an error. A leftover that cannot be removed fails the call: the
    /// contents it holds would outlive the removal.
    public static func remove(_ path: String) throws(StorageError) {
        let leftovers = try removeLeftovers(of: path)
        let code = FileSystem.unlink(path)
        guard code == 0 else {
            if code != ENOENT { throw FileSystem.writeFailed(path, code) }
            if leftovers > 0 { try FileSystem.syncFolder(FileSystem.folder(of: path), naming: path) }
            return
        }
        try FileSystem.syncFolder(FileSystem.folder(of: path), naming: path)
    }

    /// Unlinks the temporary files `write(_:to:mode:)` leaves beside `path` when the process
    /// dies mid-write; how many there were. One that is there and cannot be unlinked fails it,
    /// naming `path`'s file.
    @discardableResult
    static func removeLeftovers(of path: String) throws(StorageError) -> Int {
        let folder = FileSystem.folder(of: path)
        let prefix = ".\(FileSystem.name(of: path))."
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        var removed = 0
        for name in names where name.hasPrefix(prefix) && name.hasSuffix(".tmp") {
            let code = FileSystem.unlink(FileSystem.join(folder, name))
            // Gone meanwhile: another holder removed it.
            guard code == 0 || code == ENOENT else { throw FileSystem.writeFailed(path, code) }
            if code == 0 { removed += 1 }
        }
        return removed
    }

    /// Writes `data` to a fresh temporary file beside `path`, synced and closed; its path.
    /// On failure the temporary file is gone and the error names `path`'s file.
    private static func writeTemporary(_ data: Data, beside path: String, mode: mode_t) throws(StorageError)
        -> String
    {
        let folder = FileSystem.folder(of: path)
        let name = FileSystem.name(of: path)
        var temporary = ""
        var fd: Int32 = -EEXIST
        // A clash with another writer's temporary name is astronomically rare; a few tries suffice.
        for _ in 0..<8 where fd == -EEXIST {
            let suffix = String(UInt64.random(in: .min ... .max), radix: 16)
            temporary = FileSystem.join(folder, ".\(name).\(suffix).tmp")
            fd = FileSystem.open(temporary, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, mode)
        }
        guard fd >= 0 else { throw FileSystem.writeFailed(path, -fd) }

        var code = FileSystem.setMode(fd, mode, path: temporary)
        if code == 0 { code = data.withUnsafeBytes { FileSystem.writeAll(fd, $0, path: temporary) } }
        if code == 0 { code = FileSystem.sync(fd, path: temporary) }
        // `close` can report a deferred write error (network file systems), so it is checked too.
        if close(fd) != 0, code == 0 { code = errno }
        guard code == 0 else {
            // Already failing: the temporary file goes if it can; the first cause is the error.
            _ = FileSystem.unlink(temporary)
            throw FileSystem.writeFailed(path, code)
        }
        return temporary
    }
}
