#if canImport(XCTest)
import Foundation
import SessionBench
import SessionContract
import XCTest

extension XCTestCase {
    /// Runs `check` on `store` inside an XCTest test and fails the test once per finding: the
    /// invariant's id, its events, and the `swift test` command that runs the failing scenario and
    /// seed again.
    @discardableResult
    public func assertSessionStoreCorrect(
        _ store: StoreDescriptor, _ check: SessionStoreCheck = SessionStoreCheck(), file: StaticString = #filePath,
        line: UInt = #line
    ) async -> [ScenarioResult] {
        // "Class.testMethod" (Linux) or "-[Class testMethod]" (Darwin): Class/testMethod.
        let words = name.trimmingCharacters(in: CharacterSet(charactersIn: "-[]")).split(whereSeparator: { $0 == " " || $0 == "." })
        let filter = words.count == 2 ? "\(words[0])/\(words[1])" : nil
        let (results, findings) = await check.run(store) { SessionStoreCheck.command($0, filter: filter) }
        for finding in findings { XCTFail(finding.description, file: file, line: line) }
        return results
    }
}
#endif
