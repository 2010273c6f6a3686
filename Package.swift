// swift-tools-version: 6.1
import PackageDescription

// Every file imports each module whose names it uses (not names leaked through another
// import), so the dependencies below stay equal to what the code imports.
let imports: [SwiftSetting] = [.enableUpcomingFeature("MemberImportVisibility")]

let package = Package(
    name: "session-bench",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "SessionContract", targets: ["SessionContract"]),
        .library(name: "SessionStores", targets: ["SessionStores"]),
        .library(name: "TokenServer", targets: ["TokenServer"]),
        .library(name: "SessionStorage", targets: ["SessionStorage"]),
        .library(name: "SessionOracle", targets: ["SessionOracle"]),
        .library(name: "SessionMeasurement", targets: ["SessionMeasurement"]),
        .library(name: "SessionBench", targets: ["SessionBench"]),
        .library(name: "SessionBenchCLI", targets: ["SessionBenchCLI"]),
        .library(name: "SessionBenchTesting", targets: ["SessionBenchTesting"]),
        .library(name: "SessionBenchHTTP", targets: ["SessionBenchHTTP"]),
        .library(name: "SessionStoragePostgres", targets: ["SessionStoragePostgres"]),
        .executable(name: "session-bench", targets: ["session-bench"]),
        // `swift package session-bench …` in a package that depends on this one (SwiftPM ignores a
        // plugin product named like the executable, so the verb is what the user types).
        .plugin(name: "SessionBenchPlugin", targets: ["SessionBenchPlugin"]),
    ],
    // The default build is what `compare` on the default scenarios and a user's tests need: the
    // stores, the harness, the oracle, the in-process server, the plain file backends. Each trait
    // adds what some scenarios or commands use, and asking for one a build left out says which
    // trait it needs. `swift test --enable-all-traits` tests everything.
    traits: [
        // Sealed and SQLite storage backends for crash-restart and shared-storage: swift-crypto
        // (BoringSSL) and GRDB, over the system's SQLite (libsqlite3-dev).
        .trait(name: "Storage", description: "The AES-GCM sealed and SQLite storage backends (swift-crypto, GRDB)."),
        // The token server over HTTP (`serve`) and `compare --transport http`: Hummingbird and
        // AsyncHTTPClient, and the SwiftNIO they share.
        .trait(name: "HTTP", description: "The loopback OAuth server (serve) and the HTTP transport."),
        // Replicas sharing one session through PostgreSQL (postgres-nio): the storage backends the
        // `replicas` scenario runs. Needs a server only to run them, never to build.
        .trait(name: "PostgreSQL", description: "Storage backends that coordinate replicas through PostgreSQL."),
        .default(enabledTraits: []),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.1.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        .package(url: "https://github.com/ordo-one/malloc-interposer", from: "1.6.1"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        // The protocol every store implements, its tokens, errors and clock. Depends on nothing.
        .target(name: "SessionContract", swiftSettings: imports),
        // Concurrency tools shared below the stores and the harness: a Mutex that ThreadSanitizer
        // can see, a start line, a completion latch with deadlines, a parking lot, the watchdog.
        .target(name: "SessionSync", swiftSettings: imports),
        // The lock-free read store's per-thread slot: one thread-local pointer.
        .target(name: "CReaderSlot"),
        // The competing stores, each in its own file, sharing one token lifecycle.
        .target(
            name: "SessionStores", dependencies: ["SessionContract", "SessionSync", "CReaderSlot"],
            swiftSettings: imports),
        // Where stores keep a session between launches: files written atomically, a JSON file
        // (plaintext, the UserDefaults analogue), and with the Storage trait an AES-GCM encrypted
        // file and a SQLite row (GRDB, over the system's libsqlite3); and the deliberately wrong
        // backends the crash and at-rest checks must catch.
        .target(
            name: "SessionStorage",
            dependencies: [
                "SessionContract",
                .product(name: "Crypto", package: "swift-crypto", condition: .when(traits: ["Storage"])),
                .product(name: "GRDB", package: "GRDB.swift", condition: .when(traits: ["Storage"])),
                // SQLite's own C interface: its file layer's system calls, behind a storage fault.
                .product(name: "GRDBSQLite", package: "GRDB.swift", condition: .when(traits: ["Storage"])),
            ],
            swiftSettings: imports),
        // The in-process OAuth token server: rotation, reuse detection, latency, faults, ledger.
        .target(name: "TokenServer", dependencies: ["SessionContract", "SessionSync"], swiftSettings: imports),
        // The harness's sample clock: the CPU's time-stamp counter, read inline.
        .target(name: "CSampleClock"),
        // Where the measuring process runs: the CPUs it may use, and pinning it to some.
        .target(name: "CPlacement"),
        .target(name: "CDispatchHook"),
        // Allocations counted inside each caller's calls to the store: its window, and the
        // hook the allocation counter calls inside every allocation.
        .target(name: "CAllocationWindows"),
        // The judges: what a run recorded (calls, events, the server's ledger, storage writes) in,
        // violations of the contract out. Drives nothing and measures nothing.
        .target(name: "SessionOracle", dependencies: ["SessionContract", "TokenServer"], swiftSettings: imports),
        // What the harness measures with, and judges nothing: the sample clock, latency
        // histograms, allocation counters, the process's resource usage and CPU placement.
        .target(
            name: "SessionMeasurement",
            dependencies: [
                "SessionContract", "SessionOracle", "CSampleClock", "CPlacement", "CAllocationWindows",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                // Allocation counts with no system package: a shared library preloaded into
                // each measuring process, counting every malloc on its way to the allocator.
                .product(name: "MallocInterposerSwift", package: "malloc-interposer"),
            ],
            swiftSettings: imports
        ),
        // The harness: scenarios, drivers and reports.
        .target(
            name: "SessionBench",
            dependencies: [
                "SessionContract", "TokenServer", "SessionOracle", "SessionStorage", "SessionSync",
                "SessionMeasurement", "CDispatchHook",
                "CPlacement", .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            swiftSettings: imports
        ),
        // The command line, as a library so a user's package can run it with its own stores.
        .target(
            name: "SessionBenchCLI",
            dependencies: [
                "SessionBench", "SessionContract", "SessionOracle", "SessionStores", "SessionStorage", "SessionSync",
                "SessionMeasurement", "TokenServer", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: imports
        ),
        // Deliberately broken stores that check the tool itself (a crash, a hang, a known
        // allocation count, bugs only `explore` reaches): the executable registers them when
        // SESSION_BENCH_SELF_TEST_STORES=1 is set. No product: a user's package never links them.
        .target(
            name: "SessionBenchSelfTest", dependencies: ["SessionContract", "SessionStores", "SessionSync"], swiftSettings: imports),
        // For a test target: the default scenarios on one store inside `swift test` (Swift Testing
        // or XCTest), each violation a test issue with the command that reproduces it.
        .target(
            name: "SessionBenchTesting", dependencies: ["SessionBench", "SessionContract", "SessionOracle"],
            swiftSettings: imports),
        // The token server over HTTP on loopback (Hummingbird) and a token endpoint that reaches
        // it through real sockets (AsyncHTTPClient). Empty unless the HTTP trait is on.
        .target(
            name: "SessionBenchHTTP",
            dependencies: [
                "SessionBench", "SessionContract", "SessionOracle", "TokenServer", "SessionSync",
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["HTTP"])),
                .product(name: "HummingbirdCore", package: "hummingbird", condition: .when(traits: ["HTTP"])),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .when(traits: ["HTTP"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["HTTP"])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["HTTP"])),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: .when(traits: ["HTTP"])),
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["HTTP"])),
                .product(
                    name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["HTTP"])),
            ],
            swiftSettings: imports),
        // Storage backends on a PostgreSQL server, shared by replicas on any number of machines: an
        // advisory lock or a row lock around each refresh, LISTEN/NOTIFY to tell the other replicas
        // of a new grant, and a reference-broken one with no lock. Empty unless the PostgreSQL
        // trait is on.
        .target(
            name: "SessionStoragePostgres",
            dependencies: [
                "SessionContract", "SessionStorage", "SessionSync",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["PostgreSQL"])),
            ],
            swiftSettings: imports),
        .executableTarget(
            name: "session-bench",
            dependencies: [
                "SessionBenchCLI", "SessionBenchSelfTest", "SessionBenchHTTP", "SessionBench", "SessionStoragePostgres",
                "SessionStorage",
            ],
            swiftSettings: imports),
        // The command plugin: builds the package's executable that runs this command line with the
        // package's own stores (or session-bench's own, built-in stores only, when there is none) and
        // runs it with the user's arguments.
        .plugin(
            name: "SessionBenchPlugin",
            capability: .command(
                intent: .custom(
                    verb: "session-bench",
                    description: "Build and run session-bench's command line with this package's own stores."))),
        .testTarget(
            name: "SessionBenchTests",
            dependencies: [
                "SessionBench", "SessionBenchCLI", "SessionBenchSelfTest", "SessionOracle", "SessionStores",
                "SessionStorage", "TokenServer", "SessionContract", "SessionSync", "SessionBenchHTTP",
                "SessionStoragePostgres", "SessionMeasurement", "CAllocationWindows",
                .product(name: "PropertyBased", package: "swift-property-based"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            // The export formats' published schemas and samples, read by path.
            exclude: ["Fixtures"],
            swiftSettings: imports
        ),
        .testTarget(
            name: "SessionBenchTestingTests",
            dependencies: ["SessionBenchTesting", "SessionBench", "SessionContract", "SessionOracle", "SessionStores"],
            swiftSettings: imports),
        // The judges alone, on histories written by hand: no harness, no store.
        .testTarget(
            name: "SessionOracleTests",
            dependencies: ["SessionOracle", "SessionContract", "SessionSync", "TokenServer"],
            swiftSettings: imports),
        .testTarget(
            name: "SessionStorageTests", dependencies: ["SessionStorage", "SessionContract"], swiftSettings: imports),
        .testTarget(
            name: "TokenServerTests", dependencies: ["TokenServer", "SessionContract"], swiftSettings: imports),
        .testTarget(
            name: "SessionStoresTests",
            dependencies: ["SessionStores", "TokenServer", "SessionContract", "SessionSync"],
            swiftSettings: imports
        ),
    ],
    swiftLanguageModes: [.v6]
)

// The Swift-DocC plugin (`swift package generate-documentation`) builds the DocC catalogs of
// SessionContract and SessionBenchTesting: scripts/docs asks for it with SESSION_BENCH_DOCC_PLUGIN=1.
// Only then, so that a package depending on this one never fetches it (the Swift Package Index
// adds the plugin itself when it builds documentation).
if Context.environment["SESSION_BENCH_DOCC_PLUGIN"] != nil {
    package.dependencies.append(.package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"))
}
