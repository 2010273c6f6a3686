import Foundation

enum TestEnvironment {
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
