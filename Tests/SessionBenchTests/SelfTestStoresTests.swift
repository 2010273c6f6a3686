import Foundation
import SessionBenchSelfTest
import SessionContract
import SessionStores
import Testing

/// The self-test stores live in a target of their own: the SessionBenchCLI library a user's
/// package links has none of them, and the `session-bench` executable registers them, in
/// every process it starts, only when `SESSION_BENCH_SELF_TEST_STORES=1` is set.
@Suite("Self-test stores: in the executable, not the library")
struct SelfTestStoresTests {
    static let names = SelfTestStores.all.map(\.name)

    /// The store names `list` prints, in its order.
    static func listed(environment: [String: String]) async throws -> [String] {
        let run = try await ToolProcess.run(["list"], environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.components(separatedBy: "scenarios:")[0].split(separator: "\n").dropFirst()
        return lines.compactMap { $0.split(separator: " ").first.map(String.init) }
    }

    @Test("every self-test store is reference-broken, says so in its summary, and no built-in store shares its name")
    func apart() {
        #expect(!Self.names.isEmpty)
        #expect(Set(Self.names).count == Self.names.count, "\(Self.names)")
        #expect(SelfTestStores.all.allSatisfy { $0.isReferenceBroken && $0.summary.hasSuffix("(self-test)") })
        #expect(Set(StoreCatalog.all.map(\.name)).isDisjoint(with: Self.names))
    }

    @Test(
        "list shows the self-test stores after the built-in ones with SESSION_BENCH_SELF_TEST_STORES=1, and none without"
    )
    func listedOnlyWhenAsked() async throws {
        let plain = try await Self.listed(environment: ["SESSION_BENCH_SELF_TEST_STORES": "0"])
        #expect(plain == StoreCatalog.all.map(\.name), "\(plain)")
        let asked = try await Self.listed(environment: ["SESSION_BENCH_SELF_TEST_STORES": "1"])
        #expect(asked == StoreCatalog.all.map(\.name) + Self.names, "\(asked)")
    }
}
