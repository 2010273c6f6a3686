import Foundation
import SessionContract
import SessionOracle
import SessionSync
import Synchronization
import TokenServer

/// The storage a store that persists its session gets in the round scenarios: in memory, so a
/// save costs what a copy costs and the storms measure the store, not a disk; every save and
/// clear recorded with when it happened, for the contract's storage promises to be judged at
/// every event of every round (persist before publish, nothing of a session after its fence).
///
/// A store with a synchronous read is also looked at while each save is under way
/// (``SaveWitness``): a `currentToken()` that already answers with the generation being saved
/// handed the token out before the save ended, whether or not a caller happened to come back
/// in that window.
final class MemoryStorage: TokenStorage {
    typealias Write = StorageWrite

    private let state = Mutex<(saved: TokenGrant?, writes: [Write])>((nil, []))
    /// Which access token's grant a refresh token came in: the server's answer (a storm's storage
    /// asks its server, so a grant saved with another grant's refresh token shows).
    private let pairing: (@Sendable (RefreshToken) -> UInt64?)?

    init(pairing: (@Sendable (RefreshToken) -> UInt64?)? = nil) { self.pairing = pairing }
    private let witness = Mutex<SaveWitness?>(nil)
    /// The next save's hold, armed by ``holdNextSave()``.
    private let nextHold = Mutex<SaveHold?>(nil)
    /// Saves under way, the held one included.
    private let saving = Atomic<Int>(0)

    /// Holds the next save open until the fence the harness times into it returns (``SaveHold``).
    func holdNextSave(_ hold: SaveHold = SaveHold()) -> SaveHold {
        // Another save under way (the fence's sign-in, waiting for the witness's read, which the
        // store's lock holds back) is work in progress, as a runnable thread is.
        hold.alsoWaitWhile { [weak self] in (self?.saving.load(ordering: .acquiring) ?? 0) > 1 }
        nextHold.withLock(visibleTo: self) { $0 = hold }
        return hold
    }

    /// Disarms a hold no save took.
    func cancelHold() { nextHold.withLock(visibleTo: self) { $0 = nil } }

    /// Reads `store`'s synchronous path during each save from now on.
    func watch(_ store: any SynchronousTokenReading, startBound: Duration = SaveWitness.startBound) {
        witness.withLock(visibleTo: self) { $0 = SaveWitness(store, startBound: startBound) }
    }

    /// Stops the witness's thread; the storage stays readable.
    func close() {
        witness.withLock(visibleTo: self) { $0 }?.stop()
    }

    func load() throws(StorageError) -> TokenGrant? {
        StepTouches.note(StepFootprint(harness: true))
        return state.withLock(visibleTo: self) { $0.saved }
    }

    func save(_ grant: TokenGrant) throws(StorageError) {
        StepTouches.note(StepFootprint(harness: true))
        let generation = grant.accessToken.generation
        saving.add(1, ordering: .acquiringAndReleasing)
        defer { saving.subtract(1, ordering: .acquiringAndReleasing) }
        nextHold.withLock(visibleTo: self) { hold in
            defer { hold = nil }
            return hold
        }?.hold()
        let seen = witness.withLock(visibleTo: self) { $0 }?.read()
        let paired = pairing.map { $0(grant.refreshToken) }
        let at = TokenServer.realNanoseconds()
        state.withLock(visibleTo: self) {
            $0.saved = grant
            $0.writes.append(
                Write(
                    at: at, generation: generation, seenWhileSaving: seen, refreshIssuedWith: paired ?? nil,
                    refreshUnknown: paired.map { $0 == nil } ?? false))
        }
    }

    func clear() throws(StorageError) {
        StepTouches.note(StepFootprint(harness: true))
        let at = TokenServer.realNanoseconds()
        state.withLock(visibleTo: self) {
            $0.saved = nil
            $0.writes.append(Write(at: at, generation: nil))
        }
    }

    /// The generation saved now, and every write so far.
    var contents: (saved: UInt64?, writes: [Write]) {
        state.withLock(visibleTo: self) { ($0.saved?.accessToken.generation, $0.writes) }
    }
}

/// A thread of the harness's own that reads a store's `currentToken()` when a save asks it to.
///
/// The save waits for the read to begin (a busy machine may take a while to run the thread) and
/// then at most ``readBound`` for it to end: a store that holds its own lock across the save
/// keeps the read waiting, and the save goes on without an answer — never a deadlock, and at
/// most that bound added to a save. A read that ends within the bound, with the save not yet
/// over, saw what the store served while saving.
final class SaveWitness: @unchecked Sendable {
    /// How long a save waits for the witness's thread to begin reading.
    static let startBound: Duration = .milliseconds(50)
    /// How long a save waits, once the read has begun, for it to end. Only a store whose read
    /// waits on the save pays it: a store with a refresh under way answers `nil` at once.
    static let readBound: Duration = .milliseconds(2)

    private let startBound: Duration

    private let condition = NSCondition()
    // Guarded by `condition`.
    private var request: UInt64 = 0
    private var begun: UInt64 = 0
    private var answered: (request: UInt64, generation: UInt64?) = (0, nil)
    private var stopped = false

    init(_ store: any SynchronousTokenReading, startBound: Duration = SaveWitness.startBound) {
        self.startBound = startBound
        let thread = Thread { [weak store, condition] in
            var handled: UInt64 = 0
            while true {
                condition.lock()
                while self.request == handled && !self.stopped { condition.wait() }
                if self.stopped {
                    condition.unlock()
                    return
                }
                handled = self.request
                self.begun = handled
                condition.broadcast()
                condition.unlock()
                let generation = store?.currentToken()?.generation
                condition.lock()
                self.answered = (handled, generation)
                condition.broadcast()
                condition.unlock()
            }
        }
        thread.stackSize = 256 * 1024
        thread.start()
    }

    /// The generation the store's `currentToken()` answers with, read now from the witness's
    /// thread; `nil` for no token, or no answer within the bounds.
    func read() -> UInt64? {
        condition.lock()
        defer { condition.unlock() }
        guard !stopped else { return nil }
        request &+= 1
        let mine = request
        condition.broadcast()
        let startBy = Date().addingTimeInterval(startBound.secondsValue)
        while begun != mine && answered.request != mine {
            if !condition.wait(until: startBy) { return nil }
        }
        let readBy = Date().addingTimeInterval(Self.readBound.secondsValue)
        while answered.request != mine {
            if !condition.wait(until: readBy) { return nil }
        }
        return answered.generation
    }

    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }
}
