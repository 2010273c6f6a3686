// swift-tools-version: 6.1
// An app's own session store, checked and measured by session-bench from its own package.
import Foundation
import PackageDescription

// A path dependency is known by its folder's name, which depends on where the repository
// was cloned; read it from this file's location. Your own package names session-bench by URL.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized
let sessionBench = root.lastPathComponent

let package = Package(
    name: "CustomStore",
    platforms: [.macOS(.v15)],
    dependencies: [
        // In your project: .package(url: "https://github.com/…/session-bench", from: "0.1.0")
        .package(path: root.path),
    ],
    targets: [
        // The app's store.
        .target(name: "AppSession", dependencies: [.product(name: "SessionContract", package: sessionBench)]),
        // Its test: `swift test` runs the default scenarios on it in process (SessionBenchTesting).
        .testTarget(
            name: "AppSessionTests",
            dependencies: ["AppSession", .product(name: "SessionBenchTesting", package: sessionBench)]
        ),
        // The executable route: `swift run my-bench compare --stores app-store,mutex`, every
        // scenario (storage and crashes too) and every command, beside the built-in stores.
        // `swift package session-bench compare --stores app-store,mutex` (session-bench's command
        // plugin) finds this executable, builds it in release and runs it.
        .executableTarget(
            name: "my-bench",
            dependencies: ["AppSession", .product(name: "SessionBenchCLI", package: sessionBench)]
        ),
    ],
    swiftLanguageModes: [.v6]
)
