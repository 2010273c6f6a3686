import ArgumentParser
import SessionBench
import SessionContract

/// `--expect FILE`: violations a team knows about, each with its reason (``Expectations``).
struct ExpectOptions: ParsableArguments {
    @Option(
        name: .customLong("expect"),
        help: ArgumentHelp(
            "A file of known violations, each with its reason (see docs/expectations.md).",
            discussion: """
                A run whose every violation is named there is 'known', not a failure; any other violation still \
                fails. An expectation that did not happen in a run of its store (and scenario) is stale and fails \
                the run: remove it.
                """,
            valueName: "file"))
    var path: String?

    /// The file read and checked, before anything runs; `nil` without `--expect`.
    func load() throws -> Expectations? {
        guard let path else { return nil }
        do {
            return try Expectations.load(path: path, knownStores: StoreRegistry.all.map(\.name))
        } catch {
            throw UsageError("--expect: \(error.description)")
        }
    }
}
