import SessionBench
import SessionContract
import SessionOracle
import SessionStores
import Testing
import TokenServer

/// Each invariant, shown to catch a store that breaks it, with a correct store as control.
@Suite("The oracle catches each broken invariant", .tags(.slow), .skippedInQuickRun, .serialized, .inProcessTurn, .timeLimit(.minutes(30)))
struct OracleTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let invariant: Invariant
        let store: StoreDescriptor
        let scenario: String
        var testDescription: String { "\(invariant) ← \(store.name) in \(scenario)" }
    }

    static let cases: [Case] = [
        Case(invariant: .singleFlight, store: StoreCatalog.named("actor-naive")!, scenario: "expiry-storm"),
        Case(invariant: .sameOutcome, store: InconsistentOutcomeStore.descriptor("inconsistent-outcome"), scenario: "expiry-storm"),
        Case(invariant: .noHang, store: HangingStore.descriptor("hanging"), scenario: "expiry-storm"),
        Case(invariant: .fresh, store: StaleStore.descriptor("stale"), scenario: "expiry-storm"),
        Case(invariant: .monotonic, store: BackwardsStore.descriptor("backwards"), scenario: "401-storm"),
        Case(invariant: .staleRejectionDoesNotRefresh, store: OverEagerRejectionStore.descriptor("over-eager-401"), scenario: "401-storm"),
        Case(invariant: .noReuse, store: DoubleSubmitStore.descriptor("double-submit"), scenario: "expiry-storm"),
        Case(invariant: .signOutFence, store: NoFenceStore.descriptor("no-fence"), scenario: "sign-out-race"),
        Case(invariant: .noCrossUserLeak, store: StickyUserStore.descriptor("sticky-user"), scenario: "user-switch"),
        Case(invariant: .failureSharedNotSticky, store: StickyFailureStore.descriptor("sticky-failure"), scenario: "flaky-server"),
        Case(invariant: .cancellationIsolated, store: PoisonedByCancellationStore.descriptor("poisoned"), scenario: "cancellation-storm"),
        // Persist before publish in storms, not only at a crash: the token is served while its save is under way.
        Case(invariant: .durableRotation, store: StoreCatalog.named("persist-after-publish")!, scenario: "expiry-storm"),
        Case(invariant: .durableRotation, store: StoreCatalog.named("persist-after-publish")!, scenario: "401-storm"),
        // A grant saved with another grant's refresh token: storms see it, not only a restart.
        Case(invariant: .durableRotation, store: KeepsOldRefreshTokenStore.descriptor, scenario: "expiry-storm"),
    ]

    static func small(_ name: String) throws -> Scenario {
        var scenario = try ScenarioCatalog.named(name)
        scenario.tasks = min(scenario.tasks, 16)
        scenario.accounts = min(scenario.accounts, 4)
        // Enough flaky rounds for the seeded faults to fail some refreshes.
        scenario.rounds = scenario.kind == .flakyServer ? 20 : 6
        scenario.duration = .milliseconds(100)
        return scenario
    }

    let runner = ScenarioRunner(hangTimeout: TestEnvironment.hangTimeout)

    @Test(arguments: cases)
    func caught(_ testCase: Case) async throws {
        let scenario = try Self.small(testCase.scenario)
        // The hanging store is given up on sooner; everything else gets the usual watchdog.
        let runner = testCase.invariant == .noHang ? ScenarioRunner(hangTimeout: .milliseconds(500)) : runner
        let result = await runner.run(testCase.store, scenario)
        let found = result.violations.map(\.invariant)
        if testCase.invariant == .noHang {
            #expect(result.verdict == .hung)
            let hang = try #require(result.hang)
            #expect(hang.stuckCallers > 0 && hang.operation == .refreshWait)
        } else {
            #expect(result.verdict == .violated)
            #expect(found.contains(testCase.invariant), "found \(found) instead")
        }
        for violation in result.violations {
            #expect(violation.scenario == scenario.name && violation.seed == scenario.seed)
            #expect(!violation.summary.isEmpty)
        }
    }

    @Test("a sign-out that waits for the refresh in flight is hung in sign-out, and the report says the round held it")
    func signOutWaitsForTheNetwork() async throws {
        let runner = ScenarioRunner(hangTimeout: .milliseconds(500))
        let result = await runner.run(SignOutAwaitsRefreshStore.descriptor("sign-out-waits"), try Self.small("sign-out-race"))
        #expect(result.verdict == .hung)
        let hang = try #require(result.hang)
        #expect(hang.operation == .signOut)
        #expect(hang.detail?.contains("the store waited for the refresh in flight") == true, "\(hang.detail ?? "")")
    }

    @Test("every correct store passes every default scenario", arguments: StoreCatalog.correct)
    func control(_ store: StoreDescriptor) async throws {
        for preset in ScenarioCatalog.defaults where preset.applies(to: store) && !preset.needsStorage {
            let scenario = try Self.small(preset.name)
            let result = await runner.run(store, scenario)
            #expect(result.verdict == .pass, "\(store.name) × \(scenario.name): \(result.violations) \(result.failure ?? "")")
            #expect(result.operations > 0)
            // One refresh per expiry is owed against a healthy server. Where refreshes fail
            // (flaky-server), a caller that reaches the store after a failure may start one more
            // attempt (I10), which a loaded machine makes happen: the verdict judges those.
            if scenario.isRoundBased, scenario.faults == .none {
                #expect(
                    result.refreshesPerExpiry.map { $0 <= 1.0 } ?? true,
                    "\(store.name) × \(scenario.name): \(result.stormRefreshCalls) refresh calls over \(result.storms) storms")
            }
        }
    }


    @Test(
        "100,000 callers at one expiry: one refresh call, promptly",
        arguments: [StoreCatalog.named("lock-free-read")!, StoreCatalog.named("actor-task")!])
    func hundredThousandWaiters(_ store: StoreDescriptor) async throws {
        var scenario = try ScenarioCatalog.named("scale-storm")
        scenario.tasks = 100_000
        // A storm that grows quadratically with its waiters (as one did) blows this watchdog.
        let result = await ScenarioRunner(hangTimeout: TestEnvironment.hangTimeout * 4).run(store, scenario)
        #expect(result.verdict == .pass, "\(result.hang.map { "\($0)" } ?? "") \(result.violations)")
        #expect(result.refreshCalls == 1)
        #expect(result.stormCallers == 100_000)
    }

    @Test("a single-flight store makes exactly one refresh per expiry")
    func exactRefreshCounts() async throws {
        let scenario = try Self.small("expiry-storm")
        let result = await runner.run(StoreCatalog.named("mutex")!, scenario)
        #expect(result.refreshCalls == scenario.rounds)
        #expect(result.storms == scenario.rounds)
        #expect(result.refreshesPerExpiry == 1)
        #expect(result.waitersPerRefresh == Double(scenario.tasks))
    }
}

/// A `MutexStore` whose storage layer merges each saved grant with what it already holds and
/// keeps the old refresh token: the access token in storage is the newest, its refresh token the
/// sign-in's, which the server has long rotated away. In memory the store is right.
enum KeepsOldRefreshTokenStore {
    final class Merging: TokenStorage, @unchecked Sendable {
        let inner: any TokenStorage
        init(_ inner: any TokenStorage) { self.inner = inner }

        func load() throws(StorageError) -> TokenGrant? { try inner.load() }
        func clear() throws(StorageError) { try inner.clear() }
        func save(_ grant: TokenGrant) throws(StorageError) {
            let kept = (try? inner.load())??.refreshToken ?? grant.refreshToken
            try inner.save(TokenGrant(accessToken: grant.accessToken, refreshToken: kept))
        }
    }

    static let descriptor = StoreDescriptor(
        name: "keeps-old-refresh-token", summary: "wrong on purpose", isReferenceBroken: true,
        offersSynchronousRead: true, persistsSession: true
    ) { configuration in
        var configuration = configuration
        configuration.storage = configuration.storage.map { Merging($0) }
        return MutexStore(configuration: configuration)
    }
}
