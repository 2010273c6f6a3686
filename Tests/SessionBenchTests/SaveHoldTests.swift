import Foundation
import SessionContract
import Synchronization
import Testing

@testable import SessionBench

/// A fence timed into a save: the storage holds the save it was armed for until the fence
/// returns, so a sign-out that a store lets in between its session check and its save is met
/// every time; bounded, so a store whose save keeps the fence waiting never deadlocks the run.
@Suite("Save hold")
struct SaveHoldTests {
    private func grant(_ generation: UInt64) -> TokenGrant {
        TokenGrant(
            accessToken: AccessToken(
                value: "held", subject: Subject("hold-user"), generation: generation,
                expiresAt: TokenInstant(nanoseconds: .max)),
            refreshToken: RefreshToken("refresh-\(generation)"))
    }

    /// Saves `generation` on a thread of its own; the returned event is set when the save returned.
    private func saveOnThread(_ storage: MemoryStorage, _ generation: UInt64) -> Event {
        let done = Event()
        let grant = grant(generation)
        Thread {
            try? storage.save(grant)
            done.set()
        }.start()
        return done
    }

    /// Set once, awaited without sleeping.
    final class Event: @unchecked Sendable {
        private let condition = NSCondition()
        private var isSet = false
        func set() {
            condition.lock()
            isSet = true
            condition.broadcast()
            condition.unlock()
        }
        func wait() {
            condition.lock()
            while !isSet { condition.wait() }
            condition.unlock()
        }
        var happened: Bool {
            condition.lock()
            defer { condition.unlock() }
            return isSet
        }
    }

    @Test("the held save writes after the fence that began during it: the fence's clear comes first")
    func fenceInside() throws {
        let storage = MemoryStorage()
        try storage.save(grant(1))
        // However busy the machine, the bounds never end the hold in this test.
        let hold = storage.holdNextSave(held())
        let saved = saveOnThread(storage, 2)
        while !hold.hasBegun { sched_yield() }
        hold.fenceBegins()
        try storage.clear()
        #expect(!saved.happened, "the save waits for the fence to return")
        hold.release()
        saved.wait()
        #expect(storage.contents.writes.map(\.generation) == [1, nil, 2])
        #expect(storage.contents.saved == 2, "the ended session's grant is what the storage keeps")
    }

    @Test("a hold is for one save; a later save, and a save after the hold was disarmed, are not held")
    func oneSave() throws {
        let storage = MemoryStorage()
        let hold = storage.holdNextSave(held())
        let first = saveOnThread(storage, 1)
        while !hold.hasBegun { sched_yield() }
        hold.release()
        first.wait()
        try storage.save(grant(2))
        _ = storage.holdNextSave(held())
        storage.cancelHold()
        try storage.save(grant(3))
        #expect(storage.contents.writes.map(\.generation) == [1, 2, 3])
    }

    @Test("a fence that never returns while other threads want a CPU lets the save go on at the bound")
    func bounded() throws {
        let storage = MemoryStorage()
        let hold = storage.holdNextSave(SaveHold(startBound: .seconds(600), fenceBound: .milliseconds(1)) { 1 })
        let saved = saveOnThread(storage, 4)
        while !hold.hasBegun { sched_yield() }
        hold.fenceBegins()
        saved.wait()
        #expect(storage.contents.saved == 4)
        // No fence at all: the save waits for one only as long as the start bound.
        let unmet = storage.holdNextSave(SaveHold(startBound: .milliseconds(1), fenceBound: .seconds(600)) { 1 })
        try storage.save(grant(5))
        #expect(unmet.hasBegun)
        #expect(storage.contents.saved == 5)
    }

    @Test(
        "a fence stuck behind the save (no other thread wants a CPU) lets it go on after a few looks, long before the bound"
    )
    func stuckFence() throws {
        let storage = MemoryStorage()
        let looks = Mutex(0)
        let hold = storage.holdNextSave(
            SaveHold(startBound: .seconds(600), fenceBound: .seconds(600)) {
                looks.withLock { $0 += 1 }
                return 0
            })
        let saved = saveOnThread(storage, 6)
        while !hold.hasBegun { sched_yield() }
        hold.fenceBegins()
        saved.wait()
        #expect(storage.contents.saved == 6)
        #expect(looks.withLock { $0 } >= SaveHold.quietLooks, "as many looks in a row as the rule asks")
        // Where the kernel cannot say, the save waits the blind bound and goes on.
        let blind = storage.holdNextSave(SaveHold(startBound: .seconds(600), fenceBound: .seconds(600)) { nil })
        let again = saveOnThread(storage, 7)
        while !blind.hasBegun { sched_yield() }
        blind.fenceBegins()
        again.wait()
        #expect(storage.contents.saved == 7)
    }

    @Test("the kernel's view on this machine: while this test runs, it reads the process's threads")
    func kernelView() throws {
        #if os(Linux)
            #expect(SaveHold.othersRunnable() != nil, "/proc names the runnable threads")
        #endif
    }

    /// A hold that only the harness ends: bounds past any test's length, and never a quiet process.
    private func held() -> SaveHold { SaveHold(startBound: .seconds(600), fenceBound: .seconds(600)) { 1 } }
}
