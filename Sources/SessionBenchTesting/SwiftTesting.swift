import Foundation
import SessionBench
import SessionContract
import Testing

extension SessionStoreCheck {
    /// Runs the check on `store` inside a Swift Testing `@Test` and records each finding as an
    /// issue of that test, at `sourceLocation`: the invariant's id, its events, and the
    /// `swift test` command that runs the failing scenario and seed again.
    @discardableResult
    public func expectCorrect(
        _ store: StoreDescriptor, sourceLocation: SourceLocation = #_sourceLocation
    ) async -> [ScenarioResult] {
        // `swift test --filter` matches the test's module and names: Module.Suite/test, Module.test
        let filter = Test.current.map { test in
            let names = test.id.nameComponents.map { $0.replacingOccurrences(of: "()", with: "") }
            return test.id.moduleName + "." + names.joined(separator: "/")
        }
        let (results, findings) = await run(store) { Self.command($0, filter: filter) }
        for finding in findings { Issue.record(Comment(rawValue: finding.description), sourceLocation: sourceLocation) }
        return results
    }
}
