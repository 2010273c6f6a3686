import Dispatch
import SessionContract

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The turn-taking behind the backends' ``SharedTokenStorage`` conformance: an exclusive `flock`
/// on a lock file beside the session (`<folder>/refresh.lock`).
///
/// Each turn opens the lock file anew, so two holders in one process exclude each other as two
/// processes do (a `flock` belongs to an open file, not to a process), and the kernel drops the
/// lock of a holder that dies, however it dies. Waiting polls a non-blocking `flock` with a short
/// sleep of the task (50 µs, doubling up to 2 ms), so a waiter never blocks a thread of the
/// cooperative pool.
public struct RefreshLock: Sendable {
    /// The lock file's name inside the storage's folder.
    public static let fileName = "refresh.lock"

    /// The lock file.
    public let path: String

    public init(folder: String) { path = FileSystem.join(folder, Self.fileName) }

    /// Runs `body` holding the lock. If the lock file cannot be opened at all (a read-only
    /// folder), `body` runs unguarded rather than never: the store still works on its own, and the
    /// save that follows fails the same way and is counted as a failed write.
    public func run<R>(_ body: () async -> R) async -> R {
        let descriptor = FileSystem.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return await body() }
        defer { close(descriptor) }
        var pause = Duration.microseconds(50)
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else { return await body() }
            await Self.sleep(pause)
            pause = min(pause * 2, .milliseconds(2))
        }
        defer { flock(descriptor, LOCK_UN) }
        return await body()
    }

    /// Suspends for `duration` even in a cancelled task (whose `Task.sleep` returns at once, which
    /// would turn the wait into a busy loop).
    private static func sleep(_ duration: Duration) async {
        let nanoseconds =
            Int(duration.components.seconds) * 1_000_000_000
            + Int(duration.components.attoseconds / 1_000_000_000)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { done.resume() }
        }
    }
}

/// A storage whose session lives in one folder of its own, shared through a ``RefreshLock`` in
/// that folder.
public protocol FolderStorage: SharedTokenStorage {
    /// The session's file; its folder holds the lock.
    var path: String { get }
}

extension FolderStorage {
    public func whileRefreshing<R>(_ body: () async -> R) async throws(StorageError) -> R {
        await RefreshLock(folder: FileSystem.folder(of: path)).run(body)
    }
}

extension JSONFileStorage: FolderStorage {}
extension InPlaceJSONFileStorage: FolderStorage {}
#if Storage
extension EncryptedFileStorage: FolderStorage {}
extension SQLiteStorage: FolderStorage {}
extension LeakyEncryptedFileStorage: FolderStorage {}
#endif
