import Foundation

enum TestEnvironment {
    /// Whether this is the ThreadSanitizer build (`-DSESSION_BENCH_TSAN`).
    static let isThreadSanitized: Bool = {
        #if SESSION_BENCH_TSAN
        return true
        #else
        return false
        #endif
    }()

    static let heavySuiteSkipped =
        "a suite that saturates the cooperative pool: under ThreadSanitizer it starves the suites beside it; it runs in the plain build"

    static let processSuiteSkipped =
        "drives the executable's input handling and signals, not shared state: under ThreadSanitizer each run of the instrumented tool is ten times slower and its runtime reacts to file-size limits itself; it runs in the plain build"

    /// How long the tests let a phase take before a store counts as hung: the tool's default,
    /// or four times it under ThreadSanitizer, which slows everything and runs beside the
    /// other suites.
    static let hangTimeout: Duration = {
        #if SESSION_BENCH_TSAN
        return .seconds(20)
        #else
        return .seconds(5)
        #endif
    }()

    /// Whether the measuring processes can count allocations: jemalloc installed, and not a
    /// ThreadSanitizer build (TSan's allocator then serves malloc, and the tool says so).
    static let allocationsCountable: Bool = {
        #if SESSION_BENCH_TSAN
        return false
        #else
        return ["/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2"]
            .contains { FileManager.default.fileExists(atPath: $0) }
        #endif
    }()
}
