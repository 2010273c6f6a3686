// swift-tools-version: 6.1
// The mutation runner's source rewriter: it puts every mutant of the stores and the token
// lifecycle into one build, each behind a run-time switch (mutant schemata), so that a full
// mutation run is one build and one `compare` per mutant. `scripts/mutation-score` drives it.
import PackageDescription

let package = Package(
    name: "mutate",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(url: "https://github.com/swiftlang/swift-syntax", from: "602.0.0"),
    ],
    targets: [
        .executableTarget(
            name: "mutate",
            dependencies: [
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftParser", package: "swift-syntax"),
                .product(name: "SwiftOperators", package: "swift-syntax"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
