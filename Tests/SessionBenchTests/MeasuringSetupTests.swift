import Foundation
import SessionBench
@testable import SessionBenchCLI
@testable import SessionMeasurement
import Testing

/// What a measuring process is started with for each allocator and counter, and how the gate
/// treats counts from another counter than its file's.
@Suite("Measuring setup")
struct MeasuringSetupTests {
    static let interposer = "/build/libMallocInterposerSwift.so"

    func environment(_ setup: MeasuringSetup, base: [String: String] = [:]) -> [String: String] {
        setup.environment(base: base, interposer: Self.interposer, jemalloc: "/usr/lib/libjemalloc.so.2")
    }

    @Test("system malloc: the interposer preloaded, counting named")
    func systemAllocator() {
        let environment = environment(MeasuringSetup(allocator: .system, counter: .interposer))
        #expect(environment["LD_PRELOAD"] == Self.interposer)
        #expect(environment[AllocationCounter.counterVariable] == "interposer")
        #expect(environment["MALLOC_CONF"] == nil, "nothing set for an allocator not in use")
    }

    @Test("jemalloc is counted by its own statistics; the interposer over it is refused")
    func jemallocCounters() throws {
        #expect(MeasuringSetup.defaultCounter(for: .jemalloc) == .jemalloc)
        #expect(MeasuringSetup.defaultCounter(for: .system) == .interposer)
        #expect(throws: UsageError.self) { try MeasuringSetup(allocator: .jemalloc, counter: .interposer).validate(inProcess: false) }
        #expect(throws: UsageError.self) { try MeasuringSetup(allocator: .system, counter: .jemalloc).validate(inProcess: false) }
    }

    @Test("jemalloc counting itself: jemalloc alone, its thread cache off last so it wins")
    func jemallocCountingItself() {
        let environment = environment(MeasuringSetup(allocator: .jemalloc, counter: .jemalloc), base: ["MALLOC_CONF": "tcache:true"])
        #expect(environment["LD_PRELOAD"] == "/usr/lib/libjemalloc.so.2")
        #expect(environment["MALLOC_CONF"] == "tcache:true,tcache:false")
        #expect(environment[AllocationCounter.counterVariable] == "jemalloc")
    }

    @Test("a preload already there (the tool's own) stays, after the chosen ones")
    func existingPreloadKept() {
        let environment = environment(MeasuringSetup(), base: ["LD_PRELOAD": "/other/libjemalloc.so.2"])
        #expect(environment["LD_PRELOAD"] == "\(Self.interposer):/other/libjemalloc.so.2")
    }

    @Test("the gate never holds counts from one counter to limits set with another")
    func countersAreNotCompared() throws {
        let file = try Thresholds.parse(
            Data(#"{ "version": 1, "limits": [ { "metric": "allocs_per_op", "store": "mutex", "scenario": "steady-reads", "max": 5 } ] }"#.utf8),
            path: "t.json", knownStores: ["mutex"])
        #expect(file.run.allocationCounter == nil, "the interposer by default")
        var result = ScenarioResult(store: "mutex", scenario: try ScenarioCatalog.named("steady-reads"), verdict: .pass)
        result.operations = 1000
        result.allocations = 0
        result.allocationCounter = .jemalloc
        let outcomes = ThresholdCheck(thresholds: file, results: [result]).evaluate().filter { $0.source == "limits[0]" }
        #expect(outcomes.count == 1)
        #expect(outcomes.first?.passed == false)
        #expect(outcomes.first?.measured.contains("not comparable") == true, "\(outcomes)")
        result.allocationCounter = .interposer
        let same = ThresholdCheck(thresholds: file, results: [result]).evaluate()
        #expect(same.allSatisfy { $0.passed }, "\(same)")
    }

    @Test(
        "the file's allocator and counter are read strictly",
        arguments: [
            (#"{"version":1,"run":{"allocator":"tcmalloc"},"limits":[]}"#, "run.allocator"),
            (#"{"version":1,"run":{"allocation_counter":"valgrind"},"limits":[]}"#, "run.allocation_counter"),
            (#"{"version":1,"run":{"allocation_counter":"jemalloc"},"limits":[]}"#, "run.allocation_counter"),
            (#"{"version":1,"run":{"allocator":1},"limits":[]}"#, "run.allocator"),
        ])
    func strictRunKeys(_ json: String, _ key: String) {
        #expect(throws: ThresholdsError.self) { try Thresholds.parse(Data(json.utf8), path: "t.json", knownStores: []) }
        do {
            _ = try Thresholds.parse(Data(json.utf8), path: "t.json", knownStores: [])
        } catch {
            #expect(error.key == key, "\(json): \(error)")
        }
        let valid = #"{"version":1,"run":{"allocator":"jemalloc","allocation_counter":"jemalloc"},"limits":[]}"#
        #expect(throws: Never.self) { try Thresholds.parse(Data(valid.utf8), path: "t.json", knownStores: []) }
    }
}
