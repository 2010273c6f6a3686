import SessionBench
import SessionBenchTesting
import SessionStores
import XCTest

/// The XCTest door: a correct store passes an `XCTestCase` with no failure recorded.
final class XCTestSupportTests: XCTestCase {
    func testCorrectStorePasses() async throws {
        let mutex = try XCTUnwrap(StoreCatalog.named("mutex"))
        let check = SessionStoreCheck(scenarios: ["expiry-storm"], rounds: 3, environment: [:])
        let results = await assertSessionStoreCorrect(mutex, check)
        XCTAssertEqual(results.map(\.scenario), ["expiry-storm"])
        XCTAssertEqual(results.map(\.verdict), [.pass])
    }
}
