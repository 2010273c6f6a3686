// Where a synchronous read's time goes: the same tight loop of `currentToken()` calls on T OS
// threads, over readers that each add one piece of what lock-free-read does on top of the
// plain-load floor, interleaved in one run so that the machine's state is shared between them.
//
//   swift run -c release --package-path Benchmarks sync-read-breakdown [threads…]
//
// Each line: calls/s of all threads together (median of the rounds) and that over the floor.
import Foundation
import SessionContract
import SessionStores
import Synchronization
import TokenServer

/// A reader of the probe: only `currentToken()` is measured; the rest of the store answers with
/// its one token.
protocol ProbeReader: SynchronousTokenReading {
    var token: AccessToken { get }
}

extension ProbeReader {
    func validToken() async throws(SessionError) -> AccessToken { token }
    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken { self.token }
    func signIn(_ credentials: Credentials) async throws(SessionError) {}
    func signOut() async {}
}

/// The floor: a token in the reading thread's own object, returned with no synchronization
/// (as the tool's sync-read floor, `PlainLoad`).
final class PlainLoad: ProbeReader, @unchecked Sendable {
    let token: AccessToken
    init(token: AccessToken) { self.token = token }
    func currentToken() -> AccessToken? { token }
}

/// The floor plus the clock read and the fresh-until compare the contract needs: a token
/// within the refresh skew is not handed out.
final class ClockedLoad: ProbeReader, @unchecked Sendable {
    let token: AccessToken
    let freshUntil: Int64
    let clock: TokenClock
    init(token: AccessToken, clock: TokenClock) {
        self.token = token
        self.clock = clock
        freshUntil = token.expiresAt.nanoseconds - 5_000_000_000
    }
    func currentToken() -> AccessToken? { clock.now().nanoseconds < freshUntil ? token : nil }
}

/// The floor plus `clock_gettime(CLOCK_MONOTONIC_COARSE)` called directly and the same compare:
/// what the clock read costs without ``TokenClock`` around it.
final class DirectClockLoad: ProbeReader, @unchecked Sendable {
    let token: AccessToken
    let freshUntil: Int64
    init(token: AccessToken) {
        self.token = token
        freshUntil = token.expiresAt.nanoseconds - 5_000_000_000
    }
    func currentToken() -> AccessToken? {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &spec)
        return Int64(spec.tv_sec) &* 1_000_000_000 &+ Int64(spec.tv_nsec) < freshUntil ? token : nil
    }
}

/// The clocked load plus a shared version checked with an acquire load, as a per-thread copy is
/// checked against its publisher's version.
final class VersionedLoad: ProbeReader, @unchecked Sendable {
    let token: AccessToken
    let freshUntil: Int64
    let clock: TokenClock
    let published: Atomic<UInt64>
    let version: UInt64 = 7
    init(token: AccessToken, clock: TokenClock) {
        self.token = token
        self.clock = clock
        freshUntil = token.expiresAt.nanoseconds - 5_000_000_000
        published = Atomic(7)
    }
    func currentToken() -> AccessToken? {
        published.load(ordering: .acquiring) == version && clock.now().nanoseconds < freshUntil ? token : nil
    }
}

/// Calls/s of `threads` threads, each calling its own reader's `currentToken()` for `seconds`.
func measure(threads: Int, seconds: Double, reader: @escaping @Sendable (Int) -> any SynchronousTokenReading) -> Double
{
    let ready = Atomic<Int>(0)
    let go = Atomic<Bool>(false)
    let done = Atomic<Int>(0)
    let total = Atomic<Int>(0)
    let elapsed = Mutex<Double>(0)
    for index in 0..<threads {
        let thread = Thread {
            let store = reader(index)
            var calls = 0
            var misses = 0
            ready.add(1, ordering: .relaxed)
            while !go.load(ordering: .acquiring) {}
            let start = ContinuousClock.now
            let end = start + .seconds(seconds)
            while ContinuousClock.now < end {
                for _ in 0..<4_096 {
                    if store.currentToken() != nil { calls &+= 1 } else { misses &+= 1 }
                }
            }
            let took = ContinuousClock.now - start
            precondition(misses == 0, "a reader missed")
            total.add(calls, ordering: .relaxed)
            elapsed.withLock {
                $0 = max($0, Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18)
            }
            done.add(1, ordering: .releasing)
        }
        thread.start()
    }
    while ready.load(ordering: .relaxed) < threads { usleep(100) }
    go.store(true, ordering: .releasing)
    while done.load(ordering: .acquiring) < threads { usleep(1_000) }
    return Double(total.load(ordering: .relaxed)) / elapsed.withLock { $0 }
}

let threadCounts = CommandLine.arguments.dropFirst().compactMap { Int($0) }
let counts = threadCounts.isEmpty ? [1, 2, 4, 16] : threadCounts
let time = ManualTime()
let clock = TokenClock.coarse
let server = TokenServer(configuration: .init(tokenLifetime: .seconds(3_600)), clock: clock)

func signedIn(_ name: String) async throws -> any SynchronousTokenReading {
    let descriptor = StoreCatalog.named(name)!
    let store = descriptor.make(SessionStoreConfiguration(endpoint: server, clock: clock, refreshSkew: .seconds(5)))
    try await store.signIn(Credentials(subject: Subject("probe")))
    _ = try await store.validToken()
    return store as! any SynchronousTokenReading
}

let lockFree = try await signedIn("lock-free-read")
let actorFast = try await signedIn("actor-fast-read")
let mutex = try await signedIn("mutex")
let template = lockFree.currentToken()!
let variants: [(String, @Sendable (Int) -> any SynchronousTokenReading)] = [
    ("plain load (the floor)", { _ in PlainLoad(token: template.unsharedCopy()) }),
    ("+ clock_gettime(COARSE), compare", { _ in DirectClockLoad(token: template.unsharedCopy()) }),
    ("+ coarse clock read and compare", { _ in ClockedLoad(token: template.unsharedCopy(), clock: clock) }),
    ("+ shared version, acquire load", { _ in VersionedLoad(token: template.unsharedCopy(), clock: clock) }),
    ("lock-free-read", { _ in lockFree }),
    ("actor-fast-read", { _ in actorFast }),
    ("mutex", { _ in mutex }),
]
// SYNC_READ_PROFILE=NAME: that reader alone on one thread for 3 s, for a profiler (perf record).
if let only = ProcessInfo.processInfo.environment["SYNC_READ_PROFILE"],
    let variant = variants.first(where: { $0.0 == only })
{
    print(String(format: "%@: %.1fM calls/s", only, measure(threads: 1, seconds: 3, reader: variant.1) / 1e6))
    exit(0)
}
let rounds = 5
for threads in counts {
    var figures = Array(repeating: [Double](), count: variants.count)
    for _ in 0..<rounds {
        for (index, variant) in variants.enumerated() {
            figures[index].append(measure(threads: threads, seconds: 0.15, reader: variant.1))
        }
    }
    let medians = figures.map { $0.sorted()[rounds / 2] }
    print("\(threads) thread(s), median of \(rounds) interleaved rounds:")
    for (index, variant) in variants.enumerated() {
        let perCall = Double(min(threads, ProcessInfo.processInfo.activeProcessorCount)) / medians[index] * 1e9
        print(
            "  " + variant.0.padding(toLength: 34, withPad: " ", startingAt: 0)
                + String(
                    format: "%8.1fM calls/s  %5.2f× floor  %5.1f ns/call per core", medians[index] / 1e6,
                    medians[index] / medians[0], perCall))
    }
}
