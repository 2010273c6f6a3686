import SessionContract
import SessionOracle
import Synchronization

/// What the workers of one steady loop share: their common start, and the highest
/// generation any of them has been handed.
final class SharedRun: Sendable {
    private let start = Atomic<UInt64>(0)
    let highestGeneration = Atomic<UInt64>(0)
    private let begun = Atomic<Int>(0)
    private let lastBegin = Atomic<UInt64>(0)

    /// Notes that one more of `workers` has begun at `ticks`; the last one sets ``everyoneBegan``.
    func began(at ticks: UInt64, of workers: Int) {
        if begun.add(1, ordering: .acquiringAndReleasing).newValue == workers {
            lastBegin.store(ticks, ordering: .releasing)
        }
    }

    /// When the last worker began, once every one has.
    var everyoneBegan: UInt64? {
        let value = lastBegin.load(ordering: .acquiring)
        return value == 0 ? nil : value
    }

    /// The loop's start, once a worker has begun.
    var started: UInt64? {
        let value = start.load(ordering: .acquiring)
        return value == 0 ? nil : value
    }

    /// The loop's start: `ticks` from the first worker to ask, the same for every later one.
    func begin(at ticks: UInt64) -> UInt64 {
        let (exchanged, original) = start.compareExchange(expected: 0, desired: ticks, ordering: .acquiringAndReleasing)
        return exchanged ? ticks : original
    }
}

/// The per-call invariants of a steady run: fresh (I4) and monotonic (I5), across every
/// worker: a batch's calls must return no generation older than the highest any worker had
/// published before the batch started (a worker publishes after its calls returned).
struct ReadChecker {
    let worker: Int
    let oracle: Oracle?
    let shared: SharedRun
    var lastGeneration: UInt64 = 0
    var published: UInt64 = 0
    var floor: UInt64 = 0

    init(worker: Int, oracle: Oracle?, shared: SharedRun) {
        self.worker = worker
        self.oracle = oracle
        self.shared = shared
    }

    @inline(__always)
    mutating func startBatch() {
        if oracle != nil { floor = shared.highestGeneration.load(ordering: .acquiring) }
    }

    @inline(__always)
    mutating func endBatch() {
        guard oracle != nil, lastGeneration > published else { return }
        published = lastGeneration
        var current = shared.highestGeneration.load(ordering: .relaxed)
        while current < published {
            let (exchanged, original) = shared.highestGeneration.compareExchange(
                expected: current, desired: published, ordering: .acquiringAndReleasing)
            if exchanged { break }
            current = original
        }
    }

    /// `notBefore` is a time no later than the call's start on the store's clock.
    @inline(__always)
    mutating func check(_ token: AccessToken, notBefore: TokenInstant) {
        if token.expiresAt <= notBefore {
            oracle?.report(
                .fresh, "worker \(worker) got generation \(token.generation), expired before the call",
                trace: [
                    "the token expired at \(token.expiresAt.nanoseconds)ns; the call started no earlier than \(notBefore.nanoseconds)ns (coarse monotonic clock)"
                ])
        }
        if token.generation < lastGeneration {
            oracle?.report(
                .monotonic, "worker \(worker) got generation \(token.generation) after \(lastGeneration)",
                trace: ["worker \(worker) had been handed generation \(lastGeneration) by an earlier call of its own"])
        } else if token.generation < floor {
            oracle?.report(
                .monotonic,
                "worker \(worker) got generation \(token.generation) after another worker had been handed generation \(floor)",
                trace: ["generation \(floor) had been handed to a worker before this worker's batch of calls started"])
        }
        lastGeneration = max(lastGeneration, token.generation)
    }
}
