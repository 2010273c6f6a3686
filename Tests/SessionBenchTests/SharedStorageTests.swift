import Foundation
import SessionContract
import SessionOracle
import SessionStorage
import SessionStores
import Testing
import TokenServer

@testable import SessionBench

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One saved session shared by several store instances: in one process (here, directly) and
/// across processes (`shared-storage`, through the command line).
@Suite("Shared storage", .tags(.slow), .skippedInQuickRun, .serialized, .timeLimit(.minutes(30)))
struct SharedStorageTests {
    /// Two instances over one folder, each with a storage object of its own, on a manual clock
    /// shared with the server, the session saved as a sign-in elsewhere would leave it.
    struct Pair {
        let time = ManualTime()
        let server: TokenServer
        let directory: String
        let stores: [any SessionStore]

        init(store: StoreDescriptor = StoreCatalog.named("mutex")!, backend: String = "json-file") async throws {
            server = TokenServer(configuration: .init(tokenLifetime: .seconds(60)), clock: .manual(time))
            directory = try ToolProcess.temporaryDirectory().path
            let make = StorageBackendCatalog.named(backend)!
            try make.make(directory: directory).save(try await server.signIn(Credentials(subject: Subject("u"))))
            var stores: [any SessionStore] = []
            for _ in 0..<2 {
                stores.append(
                    store.make(
                        SessionStoreConfiguration(
                            endpoint: server, clock: .manual(time), storage: try make.make(directory: directory))))
            }
            self.stores = stores
        }

        var refreshes: [LedgerEntry] { server.ledger.entries.filter { $0.call == .refresh } }

        /// Every caller of both instances reports a 401 for the token its instance holds.
        func storm(callers: Int = 16) async throws -> Set<UInt64> {
            var held: [AccessToken] = []
            for store in stores { held.append(try await store.validToken()) }
            return try await withThrowingTaskGroup(of: UInt64.self) { group in
                for (store, token) in zip(stores, held) {
                    for _ in 0..<callers {
                        group.addTask { try await store.tokenRejected(token).generation }
                    }
                }
                return try await group.reduce(into: Set<UInt64>()) { $0.insert($1) }
            }
        }
    }

    @Test("two instances in one process: one refresh per 401 storm, the other takes the saved grant")
    func twoInstancesOneRefresh() async throws {
        let pair = try await Pair()
        defer { try? FileManager.default.removeItem(atPath: pair.directory) }
        for round in 1...5 {
            let got = try await pair.storm()
            #expect(got == [UInt64(round + 1)], "every caller of both instances got the round's one new token")
            #expect(pair.refreshes.count == round, "exactly one refresh call per storm")
        }
        #expect(pair.refreshes.allSatisfy { $0.outcome == .issued }, "no refresh token presented twice")
    }

    @Test("a saved grant whose token expired too is refreshed with its own refresh token, never the old one")
    func expiredSavedGrantIsRefreshedWithItsToken() async throws {
        let pair = try await Pair()
        defer { try? FileManager.default.removeItem(atPath: pair.directory) }
        let first = try await pair.stores[0].validToken()
        #expect(try await pair.stores[0].tokenRejected(first).generation == 2)
        pair.time.advance(by: .seconds(61))
        // The second instance still holds generation 1, long expired; storage holds generation 2,
        // expired as well: it must present generation 2's refresh token.
        #expect(try await pair.stores[1].validToken().generation == 3)
        #expect(pair.refreshes.map(\.presentedGeneration) == [1, 2])
        #expect(pair.refreshes.allSatisfy { $0.outcome == .issued })
    }

    @Test("a sign-out by one holder ends the shared session for the other at its next refresh")
    func signOutElsewhereEndsTheSession() async throws {
        let pair = try await Pair()
        defer { try? FileManager.default.removeItem(atPath: pair.directory) }
        let token = try await pair.stores[1].validToken()
        await pair.stores[0].signOut()
        await #expect(throws: SessionError.signedOut) { try await pair.stores[1].tokenRejected(token) }
        #expect(pair.refreshes.isEmpty, "the ended session's refresh token is never presented")
    }

    @Test("the process-wide lock holds two instances of one process apart too (its bug is across processes)")
    func processLockHoldsWithinAProcess() async throws {
        let pair = try await Pair(store: StoreCatalog.named("shared-process-lock")!)
        defer { try? FileManager.default.removeItem(atPath: pair.directory) }
        for _ in 1...3 { _ = try await pair.storm() }
        #expect(pair.refreshes.count == 3)
    }

    @Test("the refresh lock waits for a holder on another open file, as another process's would be")
    func refreshLockWaitsForAnotherHolder() async throws {
        let directory = try ToolProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let lock = RefreshLock(folder: directory.path)
        let other = open(lock.path, O_RDWR | O_CREAT, 0o600)
        #expect(other >= 0)
        #expect(flock(other, LOCK_EX) == 0)
        let ran = ManualTime(start: TokenInstant(nanoseconds: 0))
        let waiter = Task { await lock.run { ran.advance(by: .nanoseconds(1)) } }
        try await Task.sleep(for: .milliseconds(100))
        #expect(ran.now.nanoseconds == 0, "the body waits while the other holder has the lock")
        close(other)  // a holder that dies: the kernel drops its lock
        await waiter.value
        #expect(ran.now.nanoseconds == 1)
    }

    /// `compare` with JSON output, as the crash tests run it.
    func compare(_ arguments: [String]) async throws -> (
        status: Int32, results: [CrashRestartTests.Result], printed: String
    ) {
        try await CrashRestartTests().compare(arguments)
    }

    @Test("across two processes, correct stores make exactly one refresh per 401 storm or expiry on every backend")
    func correctStoresPassAcrossProcesses() async throws {
        // Processes a loaded machine kept from the CPUs or the disk for every window of a long
        // wait end in the machine's error, not a verdict: that store × backend runs again.
        let (status, results, printed) = try await CrashRestartTests.compareRetryingMachineErrors(
            ["--stores", "mutex,serial-queue,actor-task", "--scenario", "shared-storage"],
            as: CrashRestartTests.Result.self)
        #expect(status == 0, "\(printed)")
        #expect(printed.contains("actor-task do not share a storage"), "a store that does not share is named")
        #expect(
            results.count == 2 * StorageBackendCatalog.correct(servers: false).count,
            "two stores × every correct backend")
        for result in results {
            #expect(result.verdict == "pass", "\(result.store) × \(result.scenario): \(result.violations)")
            let figures = try #require(result.persistence)
            #expect(figures.processes == 2 && figures.holders == 4)
            // Per four events: all four instances (three take the grant), all four again, one alone
            // (none), three (two take it).
            // No lock here has a timeout: no caller may give up, crowded or not.
            #expect(figures.grantsTaken == 4 * (3 + 3 + 0 + 2) && figures.crowdedEvents == nil)
            #expect(figures.fileMode == "0600")
            #expect(result.latencies.contains { $0.kind == "rejection" && $0.count == 4 * (4 + 1) * 8 })
        }
        #expect(!printed.contains("shared-storage-1-user"), "the user id is never printed")
    }

    @Test("a store whose lock is the process's alone fails single-flight and no-reuse on every backend")
    func processLocalLockFails() async throws {
        let (status, results, printed) = try await compare([
            "--stores", "shared-process-lock", "--scenario", "shared-storage",
        ])
        #expect(status == 1, "\(printed)")
        #expect(results.count == StorageBackendCatalog.correct(servers: false).count)
        for result in results {
            let found = Set(result.violations.map(\.invariant))
            #expect(found.isSuperset(of: [Invariant.singleFlight.rawValue, Invariant.noReuse.rawValue]), "\(printed)")
        }
    }

    #if Storage
        @Test("over a wrong backend the shared session fails the backend's invariant: I16 after the sign-out, I17")
        func wrongBackendsFail() async throws {
            let (status, results, printed) = try await compare([
                "--stores", "mutex", "--scenario",
                "shared-storage:sqlite-plain-delete,shared-storage:encrypted-file-leaky",
            ])
            #expect(status == 1, "\(printed)")
            #expect(
                results.map { $0.violations.map(\.invariant) } == [
                    [Invariant.signOutDurable.rawValue], [Invariant.sealedAtRest.rawValue],
                ])
        }
    #endif
}
