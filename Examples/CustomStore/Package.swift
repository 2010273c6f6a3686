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
        .executableTarget(
            name: "my-bench",
            dependencies: [
                .product(name: "SessionContract", package: sessionBench),
                .product(name: "SessionBenchCLI", package: sessionBench),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
