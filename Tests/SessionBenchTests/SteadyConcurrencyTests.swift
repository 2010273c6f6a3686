import SessionBench
import SessionContract
import SessionMeasurement
import SessionOracle
import SessionStores
import Testing

/// Steady callers are all live at once, whatever their number, and a store that cannot keep
/// up with an arrival rate is measured, not reported as hung.
@Suite(
    "Steady callers run at once", .tags(.slow), .skippedInQuickRun, .serialized, .inProcessTurn,
    .timeLimit(.minutes(30)),
    .disabled(if: TestEnvironment.isThreadSanitized, Comment(rawValue: TestEnvironment.heavySuiteSkipped)))
struct SteadyConcurrencyTests {
    static let duration = Duration.milliseconds(200)

    @Test(arguments: [1, 2, 8, 64, 512, 1000])
    func everyCallerRunsAtOnce(_ tasks: Int) async throws {
        var scenario = try ScenarioCatalog.named("steady-reads")
        scenario.tasks = tasks
        scenario.duration = Self.duration
        for store in StoreCatalog.correct {
            let result = await ScenarioRunner(hangTimeout: TestEnvironment.hangTimeout).run(store, scenario)
            #expect(
                result.verdict == .pass,
                "\(store.name) × \(tasks): \(result.hang.map { "\($0)" } ?? "") \(result.violations)")
            #expect(result.failedCalls == 0)
            #expect(result.operations > 0)
            // Every caller started before any stopped: one wave, not callers taking turns.
            #expect(result.callersAtOnce == tasks, "\(store.name) × \(tasks): \(result.callersAtOnce ?? 0) at once")
        }
    }

    @Test(
        "sync-read: currentToken() on OS threads that all run at once, with the plain-load floor beside it",
        arguments: [1, 2, 64])
    func synchronousReads(_ threads: Int) async throws {
        var scenario = try ScenarioCatalog.named("steady-reads")
        scenario.tasks = threads
        scenario.duration = Self.duration
        for store in StoreCatalog.correct {
            let result = await ScenarioRunner(hangTimeout: TestEnvironment.hangTimeout).run(store, scenario)
            #expect(
                result.verdict == .pass,
                "\(store.name) × \(threads): \(result.hang.map { "\($0)" } ?? "") \(result.violations)")
            guard store.offersSynchronousRead else {
                #expect(result.syncRead == nil, "\(store.name) has no synchronous read")
                continue
            }
            let sync = try #require(result.syncRead, "\(store.name)")
            // Released together from a barrier; how many overlap is the scheduler's business
            // (this suite runs beside others, on a machine that may be busy: two threads on two
            // cores need not run at once), so they only have to have started, and the count to
            // be one of them.
            #expect(sync.threads == threads, "\(store.name): \(sync.threads) threads")
            #expect(
                (1...threads).contains(sync.threadsAtOnce),
                "\(store.name): \(sync.threadsAtOnce) of \(sync.threads) at once")
            #expect(
                sync.operations > 0 && sync.misses == 0,
                "\(store.name): \(sync.operations) calls, \(sync.misses) misses")
            // No upper bound: on a machine too busy to give the lowest-priority threads their
            // slices the watcher stops the run a hang timeout past its time, and how long those
            // threads then take to see it is the machine's business (the suite's limit bounds a hang).
            #expect(sync.seconds >= Self.duration.seconds * 0.9, "\(store.name): \(sync.seconds)s")
            // A thread the machine gave no slice in the phase made no call: an honest zero.
            let spread = try #require(sync.callerSpread)
            #expect(spread.minimum <= spread.median && spread.median <= spread.maximum && spread.maximum > 0)
            #expect((sync.plainLoadThroughput ?? 0) > 0, "the floor is measured in the same run")
            #expect((sync.clockedLoadThroughput ?? 0) > 0, "so is the floor behind the store's clock")
            #expect(result.latencies.contains { $0.kind == .syncRead && $0.count > 0 })
            #expect(result.clockAnomalies == 0, "\(store.name): \(result.clockAnomalies) samples ran backwards")
            #expect(result.callerSpread != nil, "async callers' spread is reported too")
            #expect(result.cpus == CPUPlacement.text(CPUPlacement.allowed), "the CPUs the run could use are recorded")
        }
    }

    @Test(
        "CPU lists: 0,1 and 0-3,6 read as numbers, written back in the short form; nonsense, an empty item or a CPU named twice refused"
    )
    func cpuLists() throws {
        #expect(try CPUPlacement.parse("0") == [0])
        #expect(try CPUPlacement.parse("1,0") == [0, 1])
        #expect(try CPUPlacement.parse("0-3,6") == [0, 1, 2, 3, 6])
        for bad in ["", ",", "a", "-1", "1-0", "0-", "0--1", "1e3", "0,,1", "99999", " 1", "1,0,1", "0-2,1", "0,"] {
            #expect(throws: ListText.Invalid.self, "'\(bad)'") { try CPUPlacement.parse(bad) }
        }
        #expect(CPUPlacement.text([6, 0, 1, 2, 3]) == "0-3,6")
        #expect(CPUPlacement.text([0]) == "0")
        #expect(!CPUPlacement.allowed.isEmpty)
    }

    @Test("an arrival rate beyond the store's capacity stops at the deadline and counts what could not be issued")
    func overloadedOpenLoop() async throws {
        var scenario = try ScenarioCatalog.named("steady-reads")
        scenario.arrivalRate = 1e9
        scenario.duration = .milliseconds(200)
        let result = await ScenarioRunner(hangTimeout: TestEnvironment.hangTimeout).run(
            StoreCatalog.named("main-actor")!, scenario)
        #expect(result.verdict == .pass, "\(result.hang.map { "\($0)" } ?? "")")
        // Issuing every call the rate asked for (200 million) would take minutes: stopping at the
        // deadline takes the duration and the calls in flight, seconds at most on a loaded machine.
        #expect(result.seconds < 30, "\(result.seconds)s")
        #expect((result.unissuedCalls ?? 0) > 0)
        #expect(result.operations > 0)
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
