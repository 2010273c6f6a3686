// swift-tools-version: 6.1
// The MCP Swift SDK's OAuth client, driven by many callers at once against `session-bench serve`.
import PackageDescription

let package = Package(
    name: "MCPClient",
    platforms: [.macOS(.v15)],
    dependencies: [
        // The release whose OAuthAuthorizer this example measures.
        .package(url: "https://github.com/modelcontextprotocol/swift-sdk", exact: "0.12.1"),
    ],
    targets: [
        .executableTarget(
            name: "mcp-refresh-burst",
            dependencies: [.product(name: "MCP", package: "swift-sdk")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
