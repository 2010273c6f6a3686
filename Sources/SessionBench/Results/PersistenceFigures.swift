import SessionOracle

/// What a run over storage (`crash-restart`, `shared-storage`) measured of a store over one
/// storage backend.
public struct PersistenceFigures: Sendable, Codable, Hashable {
    /// The storage backend (`json-file`, `encrypted-file`, …).
    public var backend: String
    /// Whether the backend promises no secret in clear on disk and owner-only files.
    public var protectsAtRest: Bool
    /// The server's reuse grace window, in seconds (0: every reuse revokes the session).
    public var reuseGraceSeconds: Double
    /// Session processes started (the first one included).
    public var processes = 0
    /// Processes that were killed (or cut short in a write) rather than exiting cleanly.
    public var crashes = 0
    /// Restarts over a session that was live when its process ended.
    public var restarts = 0
    /// Of those, restarts after which the session went on (its first call got a token and no
    /// refresh was refused).
    public var survived = 0
    /// Of those, restarts after which the server refused the restored refresh token (a reuse).
    public var endedByReuse = 0
    /// Restarts that came back with an older refresh token than the server had issued, by the
    /// crash point that lost the newer one (`in-flight`, `before-save`, `mid-save`).
    public var rotationsLost: [String: Int] = [:]
    /// Whether any file of the storage held a token or the user id in clear.
    public var plaintextAtRest = false
    /// The widest permission bits seen on the storage's files (`0600`); `nil` if none was written.
    public var fileMode: String?
    /// Crash points of the schedule that never landed on a session whose storm refreshed, within
    /// the bound on processes (a store whose storms get no new grant): empty when all were played.
    public var pointsNotPlayed: [String] = []
    /// Reads made in the read phases, and storage calls made while they ran (there should be none).
    public var readsChecked = 0
    public var storageCallsDuringReads = 0
    /// `shared-storage`: store instances sharing the storage, over all its processes (0 in
    /// `crash-restart`), and the times one of them needed a new token and took the grant another
    /// had saved instead of calling the server.
    public var holders = 0
    public var grantsTaken = 0
    /// `replicas`: from the kill of a replica that held the lock to the moment every other
    /// replica's callers had a fresh token, in seconds; and the backend's lock timeout, the
    /// longest that may take beyond the refresh itself.
    public var lockHolderRecoverySeconds: Double?
    public var lockTimeoutSeconds: Double?
    /// `replicas`: the longest one of the other replicas' callers waited while a replica stalled
    /// holding the lock, before its store gave up (about the lock's timeout for a correct store).
    public var stalledHolderWaitSeconds: Double?
    /// `shared-storage`, `replicas`: events, otherwise right, whose callers gave up on a lock with a
    /// timeout (`refreshFailed`) while the machine kept the processes from a CPU or the disk: not
    /// judged for I12, their grants not counted in `grantsTaken` (`grantsNotCounted`). `nil` when
    /// there were none.
    public var crowdedEvents: Int?
    public var grantsNotCounted: Int?

    public init(backend: String, protectsAtRest: Bool, reuseGraceSeconds: Double) {
        self.backend = backend
        self.protectsAtRest = protectsAtRest
        self.reuseGraceSeconds = reuseGraceSeconds
    }

    /// Restarts after which the session neither went on nor was refused by the server: the
    /// store lost it, or gave it up, on its own (a violation says which).
    public var endedOtherwise: Int { max(0, restarts - survived - endedByReuse) }

    /// Rotations lost over all causes.
    public var rotationsLostTotal: Int { rotationsLost.values.reduce(0, +) }

    /// Rotations lost by one cause.
    public func rotationsLost(_ cause: CrashPoint) -> Int { rotationsLost[cause.rawValue] ?? 0 }
}
