import Foundation
import SessionOracle
import SessionStorage
import Testing

/// A disk that fills up or fails under the scenarios over storage never fakes a verdict: every run
/// over every backend says `error`, naming the system's cause, never `pass` and never a finding
/// against the store. The disk is the fault seam (`SESSION_BENCH_STORAGE_FAULT`), which every
/// backend writes through, in the measuring process and in every session process alike.
@Suite(
    "Storage faults under the storage scenarios", .tags(.slow), .skippedInQuickRun, .serialized,
    .timeLimit(.minutes(30)))
struct StorageFaultRunTests {
    struct Result: Decodable {
        let store: String
        let scenario: String
        let verdict: String
        let failure: String?
        let violations: [Violation]
    }

    struct Violation: Decodable { let invariant: Int }

    /// Every scenario over storage on every backend in a folder, wrong ones included: a disk that
    /// fails is the run's error whatever the backend is.
    static let scenarios: [String] = StorageBackendCatalog.all.filter { !$0.isServer }.flatMap {
        ["crash-restart:\($0.name)", "shared-storage:\($0.name)"]
    }

    /// Faults that every run meets, in the measuring process or a session process: a sign-in save
    /// (the first process's, or the one the driver makes for `shared-storage`) writes more than 3
    /// times in every backend, a session process that saves a refresh writes 7 times or more, and
    /// a sign-in save writes more than 1000 bytes.
    static let faults = ["ENOSPC:write:1", "EIO:write:3", "ENOSPC:write:7", "ENOSPC:bytes:0", "EIO:bytes:1000"]

    /// Runs `compare` over every storage scenario with `fault` on a fresh TMPDIR; the results.
    static func run(_ fault: String, store: String = "mutex") async throws -> (results: [Result], printed: String) {
        let scratch = try ToolProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let temporary = scratch.appendingPathComponent("tmp")
        try FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: false)
        let file = scratch.appendingPathComponent("results.json")
        let run = try await ToolProcess.run(
            [
                "compare", "--include-broken", "--stores", store, "--scenario", scenarios.joined(separator: ","),
                "--rounds", "4", "--output", file.path, "--quiet",
            ],
            environment: [
                "TMPDIR": temporary.path, StorageFault.environmentVariable: "\(fault):\(temporary.path)",
            ],
            timeout: 600)
        struct Report: Decodable { let results: [Result] }
        let results = (try? JSONDecoder().decode(Report.self, from: Data(contentsOf: file)).results) ?? []
        #expect(run.status == 1, "a run in error fails the command: \(run.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary.path).isEmpty, "nothing left behind")
        return (results, run.stdout + run.stderr)
    }

    @Test("a TMPDIR where no folder can be made: the scenarios over storage are errors saying so; the others run", arguments: [false, true])
    func noStorageRoot(inProcess: Bool) async throws {
        let scratch = try ToolProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let file = scratch.appendingPathComponent("results.json")
        let run = try await ToolProcess.run(
            [
                "compare", "--stores", "mutex", "--scenario", "expiry-storm,crash-restart:json-file", "--rounds", "2",
                "--output", file.path, "--quiet",
            ] + (inProcess ? ["--in-process"] : []),
            environment: ["TMPDIR": scratch.appendingPathComponent("missing").path])
        struct Report: Decodable { let results: [Result] }
        let results = try JSONDecoder().decode(Report.self, from: Data(contentsOf: file)).results
        #expect(run.status == 1, "\(run.stderr)")
        #expect(results.map(\.scenario) == ["expiry-storm", "crash-restart:json-file"])
        #expect(results.first?.verdict == "pass")
        #expect(results.last?.verdict == "error")
        #expect(results.last?.failure?.contains("could not make the run's storage folder") == true, "\(results.last?.failure ?? "")")
        #expect(results.last?.failure?.contains("(TMPDIR): No such file or directory (ENOENT)") == true)
    }

    @Test("ENOSPC and EIO, at a write or past a byte count: every storage scenario on every backend is an error naming the cause", arguments: faults)
    func everyRunIsAnError(fault: String) async throws {
        let (results, printed) = try await Self.run(fault)
        #expect(results.count == Self.scenarios.count, "\(printed)")
        let cause = "(" + fault.prefix { $0 != ":" } + ")"
        for result in results {
            let context = "\(result.scenario) under \(fault)"
            #expect(result.verdict == "error", "\(context): \(result.verdict), \(result.failure ?? "")")
            #expect(result.failure?.contains(cause) == true, "\(context): \(result.failure ?? "no failure")")
            // A wrong backend's own flaw (secrets in clear at rest) is its, fault or not.
            guard StorageBackendCatalog.correct.contains(where: { result.scenario.hasSuffix(":\($0.name)") }) else { continue }
            #expect(result.violations.isEmpty, "\(context): nothing is judged against the store: \(result.violations)")
        }
    }
}
