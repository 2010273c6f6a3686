import Foundation
import Testing
@testable import SessionBenchCLI

enum TestEnvironment {
    /// `SESSION_BENCH_QUICK_TESTS=1`: leave out the suites tagged `slow`.
    static let isQuickRun = ProcessInfo.processInfo.environment["SESSION_BENCH_QUICK_TESTS"] == "1"

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

    /// Whether the measuring processes can count allocations: everywhere but the
    /// ThreadSanitizer build, where the sanitizer serves malloc (and the tool says so).
    static let allocationsCountable = !isThreadSanitized

    /// Where jemalloc is installed, if it is (`.ci/run` installs it), found as the tool finds
    /// it: `--allocator jemalloc` runs there, and is refused with a way to install it elsewhere.
    static var jemallocPath: String? { MeasuringSetup.jemallocPath }
}

extension Tag {
    /// Suites that run the tool or whole scenarios: seconds to minutes each.
    @Tag static var slow: Self
}

extension Trait where Self == ConditionTrait {
    /// `swift test` runs every suite; `SESSION_BENCH_QUICK_TESTS=1 swift test` leaves out the
    /// suites tagged `slow`, for a local run of a minute or two. (Swift 6.3's `swift test` has
    /// no tag filter; the tag is there for tools that have one.)
    static var skippedInQuickRun: Self {
        .disabled(if: TestEnvironment.isQuickRun, "a slow suite: SESSION_BENCH_QUICK_TESTS=1 leaves it out; swift test runs it")
    }
}
