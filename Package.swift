// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "session-bench",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "SessionContract", targets: ["SessionContract"]),
        .library(name: "SessionStores", targets: ["SessionStores"]),
        .library(name: "TokenServer", targets: ["TokenServer"]),
    ],
    targets: [
        // The protocol every store implements, its tokens, errors and clock. Depends on nothing.
        .target(name: "SessionContract"),
        // Locking helpers shared below the stores: a Mutex that ThreadSanitizer can see.
        .target(name: "SessionSync"),
        // The competing stores, each in its own file, sharing one token lifecycle.
        .target(name: "SessionStores", dependencies: ["SessionContract", "SessionSync"]),
        // The in-process OAuth token server: rotation, reuse detection, latency, faults, ledger.
        .target(name: "TokenServer", dependencies: ["SessionContract", "SessionSync"]),
        .testTarget(name: "TokenServerTests", dependencies: ["TokenServer", "SessionContract"]),
        .testTarget(
            name: "SessionStoresTests",
            dependencies: ["SessionStores", "TokenServer", "SessionContract", "SessionSync"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
