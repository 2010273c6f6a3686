import SessionContract
import SessionOracle
import SessionSync
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The harness's wrapper around a store's storage in a session process: it tells the driver how
/// long each save took, counts every call (reads should make none), and, once armed, ends the
/// process at the plan's crash point inside the save of the round's refresh.
///
/// The store sees an ordinary ``TokenStorage``; nothing here depends on how the store or the
/// backend works. A call that finds the storage's server out of reach, or that fails to write (a
/// full disk, a failing one), is told to the driver (``SessionLine/unreachable(_:)``,
/// ``SessionLine/storageFailed(_:)``) before the store hears of it: a store may carry on in memory
/// after a failed save, as it should, but the round then no longer does what its scenario says,
/// and what the store does next is not its own doing. A crash in the middle of a save lowers the process's file-size limit, so the
/// kernel cuts the backend's write after a seeded number of bytes and ends the process with
/// SIGXFSZ, whatever the backend writes with.
final class CrashingStorage: TokenStorage {
    private let wrapped: any TokenStorage
    private let pipe: SessionPipe
    private let crash: CrashPoint
    private let midSaveLimit: Int
    /// The crash fires at the first save of a grant newer than this generation; `.max` while
    /// disarmed, and again once fired.
    private let armedAbove = Atomic<UInt64>(.max)
    private let calls = Atomic<Int>(0)
    private let underway = Atomic<Int>(0)
    private let parking = Atomic<Bool>(false)
    private let stalling = Atomic<Bool>(false)
    private let released = Atomic<Bool>(false)
    /// Turns under way in this storage: a load inside one is the store reading the storage again.
    private let turns = Atomic<Int>(0)

    init(wrapping storage: any TokenStorage, pipe: SessionPipe, crash: CrashPoint, midSaveLimit: Int) {
        wrapped = storage
        self.pipe = pipe
        self.crash = crash
        self.midSaveLimit = midSaveLimit
    }

    /// From now on, the first save of a grant newer than `generation` — the refresh the round
    /// is about — ends the process at the crash point (if it is one of the points inside a
    /// save). Saves of the grant the store already had (a store that saves on reads) pass.
    func arm(above generation: UInt64) {
        if crash.firesInStorage { armedAbove.store(generation, ordering: .sequentiallyConsistent) }
    }

    /// The next turn to refresh (``SharedTokenStorage/whileRefreshing(_:)``) never ends: once
    /// the storage has given it, this says `inTurn` to the driver and blocks until the process is
    /// killed — a replica that dies holding its lock.
    func parkInNextTurn() { parking.store(true, ordering: .sequentiallyConsistent) }

    /// In the next turn, the store's read of the storage is its last step for a while: once it
    /// returns, this says `inTurn` to the driver and blocks until ``release()`` — a replica that
    /// stalls (a pause, a slow disk) holding its lock, with the refresh token it read in hand.
    func parkAfterNextReload() {
        released.store(false, ordering: .sequentiallyConsistent)
        stalling.store(true, ordering: .sequentiallyConsistent)
    }

    /// Lets a stalled turn go on.
    func release() { released.store(true, ordering: .sequentiallyConsistent) }

    /// Storage calls so far.
    var callCount: Int { calls.load(ordering: .sequentiallyConsistent) }

    /// Waits until no storage call has started or been under way for `quiet` (at most
    /// `limit`): a store acting on a late answer has written what it was going to write.
    func settle(quiet milliseconds: Int = 30, limit: Int = 2000) {
        var waited = 0
        while waited < limit {
            let before = callCount
            sleepThread(milliseconds: milliseconds)
            waited += milliseconds
            if callCount == before, underway.load(ordering: .sequentiallyConsistent) == 0 { return }
        }
    }

    /// Counts and runs one storage call; a failure that is the storage's is told to the driver,
    /// unless `crashing`: the save a mid-save crash cuts short fails by the crash's own hand (the
    /// file-size limit's EFBIG, on a thread that does not take SIGXFSZ), and the process dies next.
    private func call<R>(crashing: Bool = false, _ body: () throws(StorageError) -> R) throws(StorageError) -> R {
        calls.add(1, ordering: .sequentiallyConsistent)
        underway.add(1, ordering: .sequentiallyConsistent)
        defer { underway.subtract(1, ordering: .sequentiallyConsistent) }
        do throws(StorageError) { return try body() } catch {
            if !crashing { tell(error) }
            throw error
        }
    }

    /// Tells the driver of a failure that is the storage's, not the store's: a server out of
    /// reach, a write that failed. (An unreadable session is the store's or the backend's to
    /// answer for, and the checks judge it.)
    private func tell(_ error: StorageError) {
        switch error {
        case .unreachable(let why): pipe.send(.unreachable(why))
        case .writeFailed: pipe.send(.storageFailed(error.description))
        case .unreadable: break
        }
    }

    func load() throws(StorageError) -> TokenGrant? {
        let loaded = try call { () throws(StorageError) in try wrapped.load() }
        if turns.load(ordering: .sequentiallyConsistent) > 0,
            stalling.exchange(false, ordering: .sequentiallyConsistent)
        {
            pipe.send(.inTurn)
            while !released.load(ordering: .sequentiallyConsistent) { sleepThread(milliseconds: 1) }
        }
        return loaded
    }

    func save(_ grant: TokenGrant) throws(StorageError) {
        let threshold = armedAbove.load(ordering: .sequentiallyConsistent)
        let firing =
            grant.accessToken.generation > threshold
            && armedAbove.compareExchange(
                expected: threshold, desired: .max, ordering: .sequentiallyConsistent
            ).exchanged
        if firing, crash == .beforeSave {
            // Dying "as the save starts": give callers the store already resumed time to say
            // what they got (a store that publishes first is seen doing so), then die.
            sleepThread(milliseconds: 50)
            Self.die()
        }
        if firing, crash == .midSave { Self.limitFileSize(to: midSaveLimit) }
        let started = TokenClock.system.now()
        defer {
            pipe.send(.saved(nanoseconds: TokenClock.system.now().duration(since: started).nanosecondsClamped))
            // The limit was never reached (a backend writing fewer bytes): die right after.
            if firing { Self.die() }
        }
        try call(crashing: firing && crash == .midSave) { () throws(StorageError) in try wrapped.save(grant) }
    }

    func clear() throws(StorageError) {
        try call { () throws(StorageError) in try wrapped.clear() }
    }

    /// SIGKILL: nothing runs on the way out.
    static func die() -> Never {
        kill(getpid(), SIGKILL)
        while true { sleepThread(milliseconds: 1000) }
    }

    private static func limitFileSize(to bytes: Int) {
        signal(SIGXFSZ, SIG_DFL)
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit)
        limit.rlim_cur = rlim_t(max(bytes, 1))
        setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit)
    }
}

/// Sleeps the calling thread (not a task: the store is inside a synchronous storage call).
func sleepThread(milliseconds: Int) {
    // usleep may return early on a signal: sleep again until the deadline.
    let deadline = ContinuousClock.now + .milliseconds(milliseconds)
    while ContinuousClock.now < deadline {
        usleep(UInt32(max(1, (deadline - ContinuousClock.now).nanosecondsClamped / 1000)))
    }
}

/// Shares the wrapped storage's turns and passes on its announcements, when it has them: the store
/// sees the backend as the backend is (a backend that announces nothing gives a stream that ends
/// at once, which a store takes as no announcements).
extension CrashingStorage: AnnouncingTokenStorage {
    func announcements() -> AsyncStream<TokenGrant> {
        guard let announcing = wrapped as? any AnnouncingTokenStorage else {
            return AsyncStream { $0.finish() }
        }
        return announcing.announcements()
    }

    func whileRefreshing<R>(_ body: () async -> R) async throws(StorageError) -> R {
        guard let shared = wrapped as? any SharedTokenStorage else { return await body() }
        do throws(StorageError) {
            return try await turn(shared, body)
        } catch {
            // A turn not had is the contract's (a lock wait that timed out, which the store fails
            // as a transient error), unless the storage's server is out of reach.
            if case .unreachable(let why) = error { pipe.send(.unreachable(why)) }
            throw error
        }
    }

    private func turn<R>(_ shared: any SharedTokenStorage, _ body: () async -> R) async throws(StorageError) -> R {
        try await shared.whileRefreshing {
            if parking.exchange(false, ordering: .sequentiallyConsistent) {
                pipe.send(.inTurn)
                while true { sleepThread(milliseconds: 1000) }
            }
            turns.add(1, ordering: .sequentiallyConsistent)
            defer { turns.subtract(1, ordering: .sequentiallyConsistent) }
            return await body()
        }
    }
}
