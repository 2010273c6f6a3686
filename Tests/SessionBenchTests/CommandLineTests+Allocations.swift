import Foundation
import SessionBench
import SessionContract
import SessionMeasurement
import SessionStores
import Testing

/// Allocation counts through the command line, as a user gets them: on a machine with no
/// system package (the interposer), and with jemalloc where it is installed. Each test asserts
/// in every environment: where something cannot count, what the tool says instead. Part of the
/// command-line suite, so its measuring processes take turns with the others' instead of
/// loading the machine beside them.
extension CommandLineTests {
    var cli: CommandLineTests { self }
    static let selfTest = ["SESSION_BENCH_SELF_TEST_STORES": "1"]
    static let steady = [
        "--scenario", "steady-reads", "--tasks", "2", "--duration", "100ms", "--format", "json", "--quiet",
    ]

    func report(_ arguments: [String], environment: [String: String] = [:]) async throws -> (
        run: ToolProcess.Run, report: ResultsReport?
    ) {
        let run = try await cli.run(arguments, environment: environment)
        return (run, try? JSONDecoder().decode(ResultsReport.self, from: Data(run.stdout.utf8)))
    }

    @Test("with no system package, fast-path reads that do not allocate count 0.00 and the rest count")
    func interposerByDefault() async throws {
        let (run, report) = try await report(
            ["compare", "--stores", "mutex,nslock,lock-free-read,serial-queue,main-actor"] + Self.steady)
        #expect(run.status == 0, "\(run.stderr)")
        let results = try #require(report).results
        #expect(results.count == 5)
        guard TestEnvironment.allocationsCountable else {
            for result in results {
                #expect(result.allocations == nil, "never a silent zero")
                #expect(
                    result.allocationNote?.contains("compiled out of sanitizer builds") == true,
                    "\(result.allocationNote ?? "")")
            }
            return
        }
        for result in results {
            #expect(result.allocationCounter == .interposer)
            #expect(result.allocator == .system)
            #expect(result.allocationNote == nil)
            let perRead = try #require(result.allocationsPerOperation, "\(result.store)")
            switch result.store {
            case "serial-queue": #expect(perRead >= 1, "dispatch_sync allocates on Linux (\(perRead)/op)")
            case "main-actor":
                // Each read hops to the main actor and back: the main thread enqueues the
                // caller's task on the global executor after the task has left it, and those
                // allocations are the read's too (without the enqueue hook: 0.0001).
                #expect(perRead >= 0.1, "the hops' allocations are counted (\(perRead)/op)")
            case "lock-free-read": Self.expectPerThreadCopiesOnly(result)
            default:
                #expect(perRead == 0, "\(result.store): a fast-path read allocates nothing (\(perRead)/op)")
            }
        }
        #expect(try #require(report).metadata.allocationCounting.hasPrefix("the malloc interposer"))

        // On jemalloc, its own counter gives the same per-read counts for stores that do not
        // allocate; where jemalloc is not installed, the choice is refused with how to get it.
        let (jemallocRun, jemallocReport) = try await self.report(
            ["compare", "--stores", "mutex,nslock,lock-free-read,serial-queue", "--allocator", "jemalloc"] + Self.steady
        )
        guard TestEnvironment.jemallocPath != nil else {
            #expect(jemallocRun.status == 2)
            #expect(jemallocRun.stderr.contains("apt-get install libjemalloc2"), "\(jemallocRun.stderr)")
            return
        }
        #expect(jemallocRun.status == 0, "\(jemallocRun.stderr)")
        for result in try #require(jemallocReport).results {
            #expect(result.allocator == .jemalloc && result.allocationCounter == .jemalloc)
            let perRead = try #require(result.allocationsPerOperation, "\(result.store)")
            switch result.store {
            case "serial-queue": #expect(perRead >= 1, "serial-queue on jemalloc: \(perRead)/op")
            case "lock-free-read": Self.expectPerThreadCopiesOnly(result)
            default: #expect(perRead == 0, "\(result.store) on jemalloc: \(perRead)/op")
            }
        }
    }

    /// lock-free-read's reads allocate nothing but a thread's own copy: on a thread's first read
    /// of a token, its copy of it (and on its first read ever, its slot). A caller that runs on
    /// a thread the warm-up did not reach makes them inside its window, and they are counted —
    /// rarely, a few per run, never one per read: at most two per thread of the pool.
    static func expectPerThreadCopiesOnly(_ result: ScenarioResult) {
        let threads = UInt64(ProcessInfo.processInfo.activeProcessorCount + 2)
        let allocations = result.allocations ?? .max
        #expect(
            allocations <= 2 * threads,
            "lock-free-read on the \(result.allocator?.rawValue ?? "?") allocator: \(allocations) allocations in \(result.operations) reads, more than its copies on \(threads) threads")
    }

    // A count, not a timing: exact on a loaded machine too, because only the callers' own
    // allocations inside their calls are counted (the harness's turns between calls, its
    // coordinator and watchdog, are never in the count). Four callers on two cores: every
    // caller's turns, and reads that wait for a core, are in the run.
    @Test("a store that allocates once per read counts exactly 1 per read by the interposer and by jemalloc")
    func oneAllocationPerRead() async throws {
        let store = ["compare", "--stores", "allocates-once-per-read", "--include-broken", "--scenario", "steady-reads",
            "--tasks", "4", "--duration", "300ms", "--format", "json", "--quiet"]
        let (run, report) = try await report(store, environment: Self.selfTest)
        #expect(run.status == 0, "\(run.stderr)")
        let result = try #require(report?.results.first)
        guard TestEnvironment.allocationsCountable else {
            #expect(result.allocations == nil && result.allocationNote != nil)
            return
        }
        try expectOnePerRead(result, counter: .interposer, allocator: .system, bytes: 32)

        for setup in [["--allocator", "jemalloc"], ["--allocator", "jemalloc", "--allocation-counter", "jemalloc"]] {
            // Both spell the same setup: jemalloc is counted by its own statistics.
            let (jemallocRun, jemallocReport) = try await self.report(store + setup, environment: Self.selfTest)
            guard TestEnvironment.jemallocPath != nil else {
                // Refused before anything runs, saying how to install it.
                #expect(jemallocRun.status == 2)
                #expect(jemallocRun.stderr.contains("apt-get install libjemalloc2"), "\(jemallocRun.stderr)")
                #expect(jemallocRun.stdout.isEmpty)
                continue
            }
            #expect(jemallocRun.status == 0, "\(jemallocRun.stderr)")
            let counted = try #require(jemallocReport?.results.first)
            // 32 bytes is one of jemalloc's size classes, so both counters count 32 bytes.
            try expectOnePerRead(counted, counter: .jemalloc, allocator: .jemalloc, bytes: 32)
        }
    }

    func expectOnePerRead(
        _ result: ScenarioResult, counter: AllocationCounterKind, allocator: AllocatorKind, bytes: UInt64
    ) throws {
        #expect(result.allocationCounter == counter)
        #expect(result.allocator == allocator)
        let allocations = try #require(
            result.allocations, "\(counter) on \(allocator): \(result.allocationNote ?? "")")
        #expect(result.operations > 0)
        #expect(
            allocations == result.operations,
            "\(counter) on \(allocator): \(allocations) allocations in \(result.operations) reads")
        #expect(
            result.allocatedBytes == bytes * result.operations,
            "\(counter) on \(allocator): \(result.allocatedBytes ?? 0) bytes in \(result.operations) reads")
    }

    @Test("a counter that cannot count says why, never a silent zero")
    func unavailableCounterExplains() async throws {
        // In process, with the C library preloaded ahead of everything: the interposer does
        // not serve this process's malloc, so nothing counts, and the report says so. (A
        // ThreadSanitizer build counts nothing as it is: the sanitizer serves malloc.)
        let preloaded = ["LD_PRELOAD": "libc.so.6"]
        let arguments = ["compare", "--stores", "mutex", "--scenario", "steady-reads", "--duration", "50ms", "--in-process", "--quiet"]
        let environment = TestEnvironment.isThreadSanitized ? [:] : preloaded
        let (run, report) = try await report(arguments + ["--format", "json"], environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        let result = try #require(report?.results.first)
        #expect(result.allocations == nil)
        #expect(result.allocationCounter == nil)
        #expect(report?.metadata.allocationCounting.hasPrefix("none: ") == true, "\(report?.metadata.allocationCounting ?? "")")
        let note = result.allocationNote ?? ""
        #expect(note.contains("does not serve this process's malloc") || note.contains("compiled out"), "\(note)")
        let table = try await cli.run(arguments, environment: environment)
        #expect(table.stdout.contains("allocations not counted: "), "\(table.stdout)")
        #expect(table.stdout.contains("n/a"))

        // Measuring processes are never started under a preload of someone else's: refused.
        if !TestEnvironment.isThreadSanitized {
            let refused = try await cli.run(
                ["compare", "--stores", "mutex", "--scenario", "steady-reads", "--dry-run"], environment: preloaded)
            #expect(refused.status == 2)
            #expect(refused.stderr.contains("LD_PRELOAD names"), "\(refused.stderr)")
        }

        // --in-process alone makes the tool's own process the measuring one, counted.
        let (counted, countedReport) = try await self.report(arguments + ["--format", "json"])
        #expect(counted.status == 0, "\(counted.stderr)")
        if TestEnvironment.allocationsCountable {
            let result = try #require(countedReport?.results.first)
            #expect(result.allocationCounter == .interposer, "\(result.allocationNote ?? "")")
            #expect(result.allocations != nil)
        }
    }

    @Test("a process that is not a measuring one, like this test runner, counts nothing and says so")
    func notAMeasuringProcess() async throws {
        var scenario = try ScenarioCatalog.named("steady-reads")
        scenario.tasks = 2
        scenario.duration = .milliseconds(20)
        let mutex = try #require(StoreCatalog.all.first { $0.name == "mutex" })
        let result = await ScenarioRunner(hangTimeout: TestEnvironment.hangTimeout).run(mutex, scenario)
        #expect(result.verdict == .pass)
        #expect(result.allocations == nil, "never a silent zero")
        #expect(result.allocationNote?.contains("not a measuring process") == true, "\(result.allocationNote ?? "")")
    }

    @Test("the jemalloc counter needs the jemalloc allocator; bad values are refused in one line")
    func badSetups() async throws {
        for arguments in [
            ["--allocation-counter", "jemalloc"], ["--allocator", "tcmalloc"], ["--allocation-counter", "valgrind"],
            ["--allocator", "jemalloc", "--allocation-counter", "interposer"],
        ] {
            let run = try await cli.run(
                ["compare", "--stores", "mutex", "--scenario", "steady-reads", "--dry-run"] + arguments)
            #expect(run.status == 2, "\(arguments)")
            #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
            #expect(run.stdout.isEmpty)
        }
        let sweep = try await cli.run(["sweep", "--parameter", "allocator", "--values", "system,mimalloc", "--dry-run"])
        #expect(sweep.status == 2)
        #expect(sweep.stderr.contains("'mimalloc' is not an allocator"), "\(sweep.stderr)")
    }

    @Test("the scale storm counts the store's allocations per waiter, the caller's own cost taken out")
    func allocationsPerWaiter() async throws {
        let (run, report) = try await report(
            [
                "compare", "--stores", "mutex,serial-queue", "--scenario", "scale-storm", "--tasks", "5000", "--format",
                "json", "--quiet",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        let results = try #require(report).results
        guard TestEnvironment.allocationsCountable else {
            #expect(results.allSatisfy { $0.storeAllocationsPerWaiter == nil })
            return
        }
        for result in results {
            let caller = try #require(result.callerAllocationsPerWaiter, "\(result.store)")
            let store = try #require(result.storeAllocationsPerWaiter, "\(result.store)")
            #expect(caller >= 1, "each caller is a task: at least one allocation (\(caller))")
            #expect(store >= 0, "\(result.store): \(store) allocations per waiter")
        }
        let mutex = try #require(results.first { $0.store == "mutex" }?.storeAllocationsPerWaiter)
        let queue = try #require(results.first { $0.store == "serial-queue" }?.storeAllocationsPerWaiter)
        // mutex parks a waiter on a checked continuation, as the baseline does: it adds next to
        // nothing in a release build; serial-queue's hops add several allocations per waiter.
        #expect(queue > mutex + 1, "the queue's hops cost allocations the lock does not (\(queue) vs \(mutex))")
    }
}
