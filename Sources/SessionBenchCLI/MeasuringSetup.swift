import ArgumentParser
import Foundation
import SessionBench
import SessionMeasurement

/// The allocator a measuring process runs on and the counter that counts its allocations,
/// and the environment that sets them up.
///
/// | allocator | counter | preloaded | thread cache |
/// |---|---|---|---|
/// | system | interposer (default) | the interposer | — |
/// | jemalloc | jemalloc (default) | jemalloc alone | off (`MALLOC_CONF=tcache:false`), so its arena counts are exact |
///
/// The interposer over jemalloc is refused: malloc-interposer 1.6.1 reads the 8 bytes before
/// every pointer it is handed to free, to tell its own blocks from others, and on Linux it
/// does so even for a block at the very start of a mapping. jemalloc hands out aligned blocks
/// there, and the read crashes the process (seen with `actor-task` and `serial-queue`).
struct MeasuringSetup: Sendable, Hashable {
    var allocator: AllocatorKind = .system
    var counter: AllocationCounterKind = .interposer

    /// The counter an allocator is counted with unless one is named.
    static func defaultCounter(for allocator: AllocatorKind) -> AllocationCounterKind {
        allocator == .jemalloc ? .jemalloc : .interposer
    }

    /// The allocator named, else the system's, counted by the counter named, else the
    /// allocator's own.
    static func chosen(allocator: AllocatorKind?, counter: AllocationCounterKind?) -> MeasuringSetup {
        let allocator = allocator ?? .system
        return MeasuringSetup(allocator: allocator, counter: counter ?? defaultCounter(for: allocator))
    }

    /// Checks that this setup can be had here; the message says how to get it.
    func validate(inProcess: Bool) throws(UsageError) {
        if counter == .interposer, allocator == .jemalloc {
            throw UsageError(
                "--allocation-counter interposer cannot count over jemalloc (malloc-interposer 1.6.1 reads "
                    + "memory before jemalloc's aligned blocks and crashes the process); with --allocator jemalloc, "
                    + "counts come from jemalloc's own statistics (the default)")
        }
        if counter == .jemalloc, allocator != .jemalloc {
            throw UsageError(
                "--allocation-counter jemalloc reads jemalloc's own statistics: add --allocator jemalloc, "
                    + "or count with the interposer (the default)")
        }
        if allocator == .jemalloc, Self.jemallocPath == nil {
            throw UsageError(
                "--allocator jemalloc: libjemalloc.so.2 was not found; install it (apt-get install libjemalloc2) "
                    + "or set SESSION_BENCH_JEMALLOC to its path")
        }
        if !inProcess {
            for (name, path) in [
                ("SESSION_BENCH_INTERPOSER", Self.interposerPath), ("SESSION_BENCH_JEMALLOC", Self.jemallocPath),
            ] {
                guard let path else { continue }
                guard FileManager.default.fileExists(atPath: path), !path.contains(":"), !path.contains(" ") else {
                    throw UsageError(
                        "\(name): '\(Printable.name(path))' is not a library the loader can preload "
                            + "(missing, or a ':' or space in its path); give another path or unset it")
                }
            }
            // The measuring processes' allocator is chosen here; one preloaded from outside
            // would serve malloc under a label that says otherwise.
            let inherited = (ProcessInfo.processInfo.environment["LD_PRELOAD"] ?? "")
                .split(whereSeparator: { $0 == ":" || $0 == " " }).map(String.init)
            if let foreign = inherited.first(where: { !Self.isOurs($0) }) {
                throw UsageError(
                    "LD_PRELOAD names '\(Printable.name(foreign))': the measuring processes get their allocator from "
                        + "--allocator (system or jemalloc); unset LD_PRELOAD, or run with --in-process to measure "
                        + "under it")
            }
        }
        if inProcess, AllocationCounter.allocator != allocator {
            throw UsageError(
                "--in-process measures in this process, whose allocator is \(AllocationCounter.allocator.rawValue), "
                    + "not \(allocator.rawValue): drop --in-process (each measuring process is then started with it)")
        }
    }

    /// The measuring process's environment: `base`, with the allocator and counter preloaded.
    func environment(
        base: [String: String], interposer: String? = MeasuringSetup.interposerPath,
        jemalloc: String? = MeasuringSetup.jemallocPath
    ) -> [String: String] {
        var environment = base
        var preload: [String] = []
        switch (allocator, counter) {
        case (_, .interposer):
            if let interposer { preload.append(interposer) }
            if allocator == .jemalloc, let jemalloc { preload.append(jemalloc) }
        case (_, .jemalloc):
            if let jemalloc { preload.append(jemalloc) }
            // Last, so that it wins over a thread-cache setting of the user's.
            environment["MALLOC_CONF"] = [base["MALLOC_CONF"], "tcache:false"].compactMap { $0 }.joined(separator: ",")
        }
        // What is already there (the interposer or jemalloc, as `validate` allows) comes after.
        if let existing = base["LD_PRELOAD"], !existing.isEmpty, !preload.contains(existing) {
            preload.append(existing)
        }
        if !preload.isEmpty { environment["LD_PRELOAD"] = preload.joined(separator: ":") }
        environment[AllocationCounter.counterVariable] = counter.rawValue
        return environment
    }

    /// Whether a preloaded library is the interposer or jemalloc (the tool's own choices).
    static func isOurs(_ path: String) -> Bool {
        let name = URL(fileURLWithPath: path).lastPathComponent
        return name == InterposerLibrary.fileName || name.hasPrefix("libjemalloc.so")
    }

    /// The interposer's library: `SESSION_BENCH_INTERPOSER` (a path), else the copy this
    /// executable loaded (SwiftPM builds it beside the executable).
    static var interposerPath: String? {
        ProcessInfo.processInfo.environment["SESSION_BENCH_INTERPOSER"] ?? InterposerLibrary.path
    }

    /// Where jemalloc is installed: `SESSION_BENCH_JEMALLOC` (a path, or `off`), else the usual places.
    static var jemallocPath: String? {
        if let chosen = ProcessInfo.processInfo.environment["SESSION_BENCH_JEMALLOC"] {
            return chosen == "off" || !FileManager.default.fileExists(atPath: chosen) ? nil : chosen
        }
        let candidates = [
            "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2",
            "/usr/lib64/libjemalloc.so.2", "/usr/lib/libjemalloc.so.2", "/usr/local/lib/libjemalloc.so.2",
        ]
        return candidates.first { FileManager.default.fileExists(atPath: $0) }
    }
}

extension AllocatorKind: ExpressibleByArgument {}
extension AllocationCounterKind: ExpressibleByArgument {}
