import Synchronization

/// Callers waiting on nothing but a continuation, until released: the storms' baseline for
/// what a waiting caller costs (memory, allocations) with no store involved.
public final class ParkingLot: Sendable {
    private struct State {
        /// Checked continuations, as stores park their waiters on: the baseline is a caller
        /// parked the way a store parks it, with nothing else. (Parked on an unsafe one, the
        /// caller's shallower frames stay inside its task's first allocator slab, and every
        /// store would be charged the kilobyte slab its own one more frame spills into; a store
        /// that parks on unsafe continuations reads up to one allocation and ~50 bytes low.)
        var waiting: [CheckedContinuation<Void, Never>] = []
        /// Once open, a caller that comes to park goes straight through.
        var open = false
    }

    private let state = Mutex(State())

    public init() {}

    public func park() async {
        await withCheckedContinuation { continuation in
            let wait = state.withLock(visibleTo: self) { state in
                if !state.open { state.waiting.append(continuation) }
                return !state.open
            }
            if !wait { continuation.resume() }
        }
    }

    public var parked: Int { state.withLock(visibleTo: self) { $0.waiting.count } }

    /// Resumes every parked caller; with `stayOpen`, callers that come later do not park.
    public func releaseAll(stayOpen: Bool = false) {
        let all = state.withLock(visibleTo: self) { state in
            defer { state.waiting = [] }
            state.open = state.open || stayOpen
            return state.waiting
        }
        for continuation in all { continuation.resume() }
    }
}
