import Foundation
import SessionContract
import Synchronization
import Testing

@testable import SessionBench
@testable import SessionBenchCLI
@testable import SessionOracle

extension ExploreCommandTests {
    @Test(
        "shared-storage: every store that shares its storage passes; each wrong storage wrapper is found, and replays"
    )
    func sharedStorage() async throws {
        let correct = try await ToolProcess.run(
            ["explore", "--scenario", "shared-storage", "--schedules", "200", "--quiet"], timeout: 300)
        #expect(correct.status == 0, "\(correct.stdout)\(correct.stderr)")
        for store in ["lock-free-read", "mutex", "nslock", "barrier-queue", "serial-queue"] {
            #expect(Self.row(store, in: correct.stdout).prefix(3) == [store, "pass", "200"], "\(correct.stdout)")
        }
        // A store that does not share its storage is left out.
        #expect(Self.row("actor-task", in: correct.stdout).isEmpty, "\(correct.stdout)")
        let wrong = [
            "shared-lock-per-instance", "shared-cached-load", "shared-saves-in-background", "shared-sign-out-local",
        ]
        let found = try await ToolProcess.run(
            [
                "explore", "--stores", wrong.joined(separator: ","), "--scenario", "shared-storage", "--schedules",
                "500",
            ],
            environment: Self.selfTest, timeout: 300)
        #expect(found.status == 1, "\(found.stdout)\(found.stderr)")
        for store in wrong {
            #expect(Self.row(store, in: found.stdout).prefix(2) == [store, "violated"], "\(found.stdout)")
        }
        let replay = try #require(Self.replayArguments(in: found.stdout), "\(found.stdout)")
        let digest = try #require(Self.digest(in: found.stdout), "\(found.stdout)")
        let again = try await ToolProcess.run(replay + ["--quiet"], environment: Self.selfTest, timeout: 120)
        #expect(again.status == 1 && Self.digest(in: again.stdout) == digest, "\(again.stdout)")
    }
}

@Suite("Explored shared storage")
struct ExploredSharedStorageTests {
    @Test("holders of one in-memory session share its contents and take turns one at a time")
    func holdersShareOneSessionAndOneLock() async throws {
        let storage = SharedMemoryStorage(pairing: { _ in nil })
        let (first, second) = (storage.holder(), storage.holder())
        #expect(storage.state == .empty)
        let grant = TokenGrant(
            accessToken: AccessToken(
                value: "a", subject: Subject("s"), generation: 3, expiresAt: .init(nanoseconds: 0)),
            refreshToken: RefreshToken("r"))
        try first.save(grant)
        #expect(try second.load()?.accessToken.generation == 3 && storage.state == .session(generation: 3))
        // A body of the second holder started while the first holds its turn runs after it.
        let order = OrderLog()
        let entered = AsyncStream.makeStream(of: Void.self)
        let release = AsyncStream.makeStream(of: Void.self)
        let holding = Task {
            try await first.whileRefreshing {
                order.append("first in")
                entered.continuation.yield()
                for await _ in release.stream { break }
                order.append("first out")
            }
        }
        for await _ in entered.stream { break }
        let waiting = Task { try await second.whileRefreshing { order.append("second in") } }
        release.continuation.yield()
        try await holding.value
        try await waiting.value
        #expect(order.entries == ["first in", "first out", "second in"])
        try second.clear()
        #expect(try first.load() == nil && storage.state == .empty)
    }
}

/// What ran, in order, from several tasks.
private final class OrderLog: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var entries: [String] { lines.withLock { $0 } }
}
