import TokenServer

/// Where a `crash-restart` round ends the session process, and how.
///
/// Every point but ``clean`` is a SIGKILL (or, in the middle of a write, the kernel's
/// SIGXFSZ when the file-size limit cuts the write short): nothing the store does on the way
/// out runs, exactly as when a phone's OS kills an app or a container is killed.
public enum CrashPoint: String, Sendable, Hashable, Codable, CaseIterable {
    /// The process finishes the round and exits normally (a clean restart).
    case clean
    /// The server rotated the refresh token but the process dies before the answer arrives:
    /// the one loss no store can avoid (a grace window on the server can).
    case inFlight = "in-flight"
    /// The answer arrived; the process dies as the store starts saving it.
    case beforeSave = "before-save"
    /// The process dies in the middle of the save: the file-size limit cuts the storage's
    /// write after a seeded number of bytes, whatever the backend writes with.
    case midSave = "mid-save"
    /// The save returned; the process dies before the store resumes anyone.
    case afterSave = "after-save"
    /// Every caller has its token and the reads are done; then the process is killed.
    case afterPublish = "after-publish"
    /// The user signs out after the storm; the process is killed as `signOut()` returns.
    case afterSignOut = "after-sign-out"
    /// The user signs out while the storm's refresh is in flight; its answer arrives after
    /// `signOut()` returned; then the process is killed.
    case signOutDuringRefresh = "sign-out-during-refresh"

    /// Whether the store's storage itself fires the crash (the harness's wrapper around it).
    package var firesInStorage: Bool { self == .beforeSave || self == .midSave || self == .afterSave }

    /// Whether the round ends the session by a sign-out.
    package var signsOut: Bool { self == .afterSignOut || self == .signOutDuringRefresh }

    /// `rounds` crash points: every point in each pass of ``allCases``, in an order shuffled
    /// from `seed`, so whether a bug is caught never depends on a lucky draw.
    package static func schedule(rounds: Int, seed: UInt64) -> [CrashPoint] {
        var random = SeededRandom(seed: seed ^ 0xC4A5_4E57)
        var points: [CrashPoint] = []
        while points.count < rounds {
            var pass = allCases
            for index in stride(from: pass.count - 1, to: 0, by: -1) {
                pass.swapAt(index, Int(random.next() % UInt64(index + 1)))
            }
            points += pass
        }
        return Array(points.prefix(rounds))
    }
}

/// What a storage folder holds, as the backend reads it back.
package enum StoredState: Equatable, Sendable {
    case session(generation: UInt64)
    case empty
    case unreadable
}
