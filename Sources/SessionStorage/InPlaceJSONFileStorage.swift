#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import SessionContract

/// **Reference-broken.** The same JSON file as ``JSONFileStorage`` (`<directory>/session.json`),
/// rewritten in place the way countless `write(to:)`-without-`.atomic` and `fopen(path, "w")`
/// code does: open with `O_TRUNC`, write, close. No temporary file, no `rename`, no `fsync`.
///
/// The bug it reproduces: a crash (or power loss) between truncating and finishing the write
/// leaves a torn or empty file, so on restart the saved session is gone: ``load()`` throws
/// ``StorageError/unreadable(_:)`` and, with rotating refresh tokens, the only refresh token the
/// server still accepts is lost with it. The crash-restart check, which kills the process in the
/// middle of a save and demands that the restarted store restores the previous or the new grant,
/// must catch it. To make the tear easy to hit and to observe, each save writes the record in two
/// `write` calls, the first half and then the rest, and can run ``betweenWrites`` in the gap.
///
/// Without a crash it round-trips like the correct backend; it is wrong only under failure.
public final class InPlaceJSONFileStorage: TokenStorage {
    /// The name of the session file inside the directory: the same as ``JSONFileStorage``'s.
    public static let fileName = JSONFileStorage.fileName

    /// Where the session is kept.
    public let path: String
    /// The crash-simulation hook, run after the first half of a save is written and before the rest.
    /// When it throws, the save stops there, leaving the torn file a crash would leave, and the
    /// error is rethrown; a harness may also end the process from it (`_exit`) for a real crash.
    public let betweenWrites: (@Sendable () throws(StorageError) -> Void)?

    /// Keeps the session in `directory`, creating the folder (mode 0700) if it is missing.
    /// `betweenWrites` is for crash simulations only; see the property.
    public init(directory: String, betweenWrites: (@Sendable () throws(StorageError) -> Void)? = nil)
        throws(StorageError)
    {
        try FileSystem.makeFolder(directory, mode: 0o700)
        path = FileSystem.join(directory, Self.fileName)
        self.betweenWrites = betweenWrites
    }

    public func load() throws(StorageError) -> TokenGrant? {
        guard let data = try AtomicFile.read(path) else { return nil }
        return try StoredGrant.decode(data, from: Self.fileName)
    }

    public func save(_ grant: TokenGrant) throws(StorageError) {
        let data = try StoredGrant(grant).encoded(for: Self.fileName)
        // The bug: the old contents are destroyed here, before the new ones exist.
        let fd = FileSystem.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw FileSystem.writeFailed(path, -fd) }
        var closed = false
        defer { if !closed { close(fd) } }
        let half = data.count / 2
        var code = data.prefix(half).withUnsafeBytes { FileSystem.writeAll(fd, $0, path: path) }
        guard code == 0 else { throw FileSystem.writeFailed(path, code) }
        try betweenWrites?()
        code = data.dropFirst(half).withUnsafeBytes { FileSystem.writeAll(fd, $0, path: path) }
        guard code == 0 else { throw FileSystem.writeFailed(path, code) }
        // No fsync either: even a completed save may not survive a power loss. What `close`
        // reports (a deferred write error) is still a failed save.
        closed = true
        guard close(fd) == 0 else { throw FileSystem.writeFailed(path, errno) }
    }

    public func clear() throws(StorageError) {
        try AtomicFile.remove(path)
    }
}
