import Foundation
import SessionBench
import SessionStorage

/// The folders a run keeps its storage folders in (`crash-restart`, `shared-storage`: simulated
/// sessions, tokens in clear on the plain backends), one per process that runs scenarios over
/// storage, under the system's temporary folder.
///
/// Each is named for the process that owns it and when that process started
/// (`session-bench-run-p<PID>-t<START>-XXXXXX`), so a later run can tell a folder whose owner is
/// gone — killed with SIGKILL, which no process can act on — from one in use, and remove it.
enum StorageRoots {
    static let prefix = "session-bench-run-p"

    /// A new, empty root owned by this process, tracked so that a stop by signal removes it; or
    /// why none can be made (a full disk), naming the folder and the system's cause.
    static func make() -> Result<String, Refusal> {
        let owner = getpid()
        var template = Array(
            (NSTemporaryDirectory() + "/\(prefix)\(owner)-t\(startTicks(owner) ?? 0)-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            return .failure(
                Refusal(
                    description: "could not make the run's storage folder in \(Printable.name(NSTemporaryDirectory())) "
                        + "(TMPDIR): \(FileSystem.message(errno))"))
        }
        let path = String(cString: made)
        ProcessGuard.track(temporary: path)
        return .success(path)
    }

    /// Why a root could not be made.
    struct Refusal: Error, CustomStringConvertible {
        let description: String
    }

    /// Removes `path` so that nothing can be made in it meanwhile: it is renamed away first (a
    /// store still saving fails, rather than leave a new file behind), then removed, trying again
    /// for up to half a second while a process that is being killed still writes.
    static func retire(_ path: String) {
        let retired = path + ".removing"
        let doomed = rename(path, retired) == 0 ? retired : path
        for _ in 0..<25 {
            try? FileManager.default.removeItem(atPath: doomed)
            guard FileManager.default.fileExists(atPath: doomed) else { break }
            usleep(20_000)
        }
        ProcessGuard.untrack(temporary: path)
    }

    /// Removes the roots under the temporary folder whose owner is gone; returns how many.
    static func removeAbandoned() -> Int {
        let folder = NSTemporaryDirectory()
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        var removed = 0
        for name in names where isAbandoned(name) {
            let path = URL(fileURLWithPath: folder).appendingPathComponent(name).path
            var info = stat()
            // Only this user's folders, never through a link.
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == geteuid() else { continue }
            retire(path)
            if !FileManager.default.fileExists(atPath: path) { removed += 1 }
        }
        return removed
    }

    /// Whether `name` is a root whose owner has ended (or whose process number now belongs to
    /// another process, started at another time).
    static func isAbandoned(_ name: String) -> Bool {
        guard name.hasPrefix(prefix) else { return false }
        let fields = name.dropFirst(prefix.count).split(separator: "-", maxSplits: 2)
        guard fields.count == 3, let pid = pid_t(fields[0]), fields[1].hasPrefix("t"), let ticks = UInt64(fields[1].dropFirst())
        else { return false }
        guard kill(pid, 0) == 0 || errno == EPERM else { return true }
        guard let now = startTicks(pid) else { return false }
        return now != ticks
    }

    /// When `pid` started, in clock ticks since boot (`/proc/PID/stat`, field 22); `nil` where
    /// it cannot be read.
    static func startTicks(_ pid: pid_t) -> UInt64? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 19 ? UInt64(fields[19]) : nil
    }

    /// Removes abandoned roots and, if there were any, says so in one line (always: it is about
    /// secrets left on this machine, not progress).
    static func sweep() {
        let removed = removeAbandoned()
        guard removed > 0 else { return }
        Log.progress(
            "session-bench: removed \(removed) storage folder(s) of runs that ended without removing them "
                + "(under \(Printable.name(NSTemporaryDirectory())))")
    }

    /// Removes the sessions that this machine's runs that are gone left on the servers of
    /// `backends` (a database row that a run killed, or one whose database went out of reach
    /// before the end, could not remove) and, if there were any, says so in one line. A server out
    /// of reach is left for the run to report.
    static func sweep(servers backends: [StorageBackend]) {
        var removed: [(backend: String, count: Int)] = []
        var swept: Set<String> = []
        for backend in backends where backend.isServer && swept.insert(backend.name).inserted {
            guard let count = backend.removeAbandoned(where: ownerIsGone) else { break }
            if count > 0 { removed.append((backend.name, count)) }
        }
        guard !removed.isEmpty else { return }
        Log.progress(
            "session-bench: removed \(removed.map(\.count).reduce(0, +)) stored session(s) of runs that ended "
                + "without removing them (from the server of \(removed.map(\.backend).joined(separator: ", ")))")
    }

    /// Whether the storage folder `directory` lies in a root whose owner is gone.
    @Sendable static func ownerIsGone(_ directory: String) -> Bool {
        URL(fileURLWithPath: directory).pathComponents.contains(where: isAbandoned)
    }
}
