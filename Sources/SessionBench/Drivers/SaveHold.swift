import Foundation
import SessionContract

/// A fence timed into a save: the save it holds, once begun, waits for the harness to begin the
/// fence, then for the fence to return — or for the fence to be stuck behind the save — and
/// only then writes.
///
/// A store that checks its session under its lock and saves after letting go of it has a save
/// a sign-out can overtake: the sign-out clears the storage, returns, and the save lands after,
/// keeping the ended session for the next launch. Real threads rarely meet in that window; held
/// open, it is met every time. A store that saves under the lock its sign-out takes keeps the
/// fence waiting: once no other thread of the process wants a CPU (the fence is asleep on the
/// lock, or suspended), the save goes on. A busy machine does not end the hold early — a fence
/// waiting for a CPU is runnable — and ``fenceBound`` ends it in any case: never a deadlock.
final class SaveHold: @unchecked Sendable {
    /// How long a held save waits for the harness to begin the fence.
    static let startBound: Duration = .seconds(1)
    /// The longest a held save waits for the fence to return, once it has begun.
    static let fenceBound: Duration = .milliseconds(250)
    /// Where the kernel cannot say which threads want a CPU (no /proc): how long a held save
    /// waits for the fence.
    static let blindBound: Duration = .milliseconds(20)
    /// How often a held save looks at the process's threads, and how many looks in a row must
    /// find none but itself wanting a CPU.
    static let look: Duration = .microseconds(250)
    static let quietLooks = 4

    private let startBound: Duration
    private let fenceBound: Duration
    /// How many threads of the process other than the caller are runnable; `nil` where unknown.
    private let othersRunnable: @Sendable () -> Int?
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var busy: @Sendable () -> Bool = { false }
    private var began = false
    private var fenceBegun = false
    private var released = false

    init(
        startBound: Duration = SaveHold.startBound, fenceBound: Duration = SaveHold.fenceBound,
        othersRunnable: @escaping @Sendable () -> Int? = SaveHold.othersRunnable
    ) {
        (self.startBound, self.fenceBound, self.othersRunnable) = (startBound, fenceBound, othersRunnable)
    }

    /// The threads of this process other than the calling one that are running or ready to run.
    @Sendable static func othersRunnable() -> Int? {
        let sampler = CPUTimes.currentThread()
        return CPUTimes.threadSamples().map { CPUTimes.summed($0, sampler: sampler).runnable }
    }

    /// Also counts as work in progress, beside a runnable thread (another save under way).
    func alsoWaitWhile(_ busy: @escaping @Sendable () -> Bool) {
        condition.lock()
        self.busy = busy
        condition.unlock()
    }

    /// Whether the held save has begun.
    var hasBegun: Bool {
        condition.lock()
        defer { condition.unlock() }
        return began
    }

    /// Called by the save: says it began, and waits for the fence as the bounds allow.
    func hold() {
        condition.lock()
        defer { condition.unlock() }
        began = true
        condition.broadcast()
        let startBy = Date().addingTimeInterval(startBound.secondsValue)
        while !fenceBegun && !released {
            if !condition.wait(until: startBy) { return }
        }
        let begun = Date()
        let returnBy = begun.addingTimeInterval(fenceBound.secondsValue)
        var quiet = 0
        while !released {
            let now = Date()
            if now >= returnBy { return }
            if condition.wait(until: min(returnBy, now.addingTimeInterval(Self.look.secondsValue))) { continue }
            let busy = self.busy
            condition.unlock()
            let others = othersRunnable()
            let working = busy()
            condition.lock()
            guard let others else {
                if Date().timeIntervalSince(begun) >= Self.blindBound.secondsValue { return }
                continue
            }
            quiet = others == 0 && !working ? quiet + 1 : 0
            if quiet >= Self.quietLooks { return }
        }
    }

    /// The harness is about to begin the fence.
    func fenceBegins() {
        condition.lock()
        fenceBegun = true
        condition.broadcast()
        condition.unlock()
    }

    /// The fence returned (or will not come): the save may write.
    func release() {
        condition.lock()
        released = true
        condition.broadcast()
        condition.unlock()
    }
}
