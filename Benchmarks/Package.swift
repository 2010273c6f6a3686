// swift-tools-version: 6.1
// package-benchmark suite for session-bench's stores: `swift package benchmark` from this folder.
// Its own package so that the benchmark plugin and its malloc interposer stay out of the tool.
import Foundation
import PackageDescription

// A path dependency is known by its folder's name, which depends on where the repository was cloned.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("..").standardized
let sessionBench = root.lastPathComponent

let package = Package(
    name: "SessionBenchBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: root.path),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "SessionStoreBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "SessionContract", package: sessionBench),
                .product(name: "SessionStores", package: sessionBench),
                .product(name: "TokenServer", package: sessionBench),
            ],
            path: "Benchmarks/SessionStoreBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Where a synchronous read's time goes, piece by piece against the plain-load floor (not a
        // benchmark of the suite: `swift run -c release --package-path Benchmarks sync-read-breakdown`).
        .executableTarget(
            name: "sync-read-breakdown",
            dependencies: [
                .product(name: "SessionContract", package: sessionBench),
                .product(name: "SessionStores", package: sessionBench),
                .product(name: "TokenServer", package: sessionBench),
            ],
            path: "Probes/SyncReadBreakdown"
        ),
    ],
    swiftLanguageModes: [.v6]
)
