import Foundation
import SessionContract
import SessionOracle

/// Violations a team knows about and has chosen to live with, each with its reason: the
/// expectations file (`--expect session-bench.expect.json`). A result whose every violation is
/// expected is `known`, not a failure; a result with any other violation still fails. Strict
/// both ways: an expectation that did not happen where it could have is reported stale (and
/// fails the run), so the file cannot rot into a list of excuses — unless it says `sometimes`
/// (a violation that comes and goes with the interleaving), and why.
///
/// ```json
/// {
///   "version": 1,
///   "expect": [
///     { "store": "actor-naive", "invariant": "I1", "reason": "re-entrant across the refresh's await" },
///     { "store": "actor-naive", "invariant": "I13", "scenario": "sign-out-race", "reason": "…", "sometimes": true }
///   ]
/// }
/// ```
public struct Expectations: Sendable, Equatable {
    /// One line of the file: `invariant` may break for `store`, in `scenario` or (`nil`) in any.
    public struct Expectation: Sendable, Equatable, Codable {
        public var store: String
        public var invariant: Invariant
        public var scenario: String?
        public var reason: String
        /// A violation that comes and goes from run to run (an interleaving the machine produces
        /// some of the time): expected when it happens, never stale when it does not.
        public var sometimes: Bool

        public init(
            store: String, invariant: Invariant, scenario: String? = nil, reason: String, sometimes: Bool = false
        ) {
            self.store = store
            self.invariant = invariant
            self.scenario = scenario
            self.reason = reason
            self.sometimes = sometimes
        }

        func covers(store: String, scenario: String, _ invariant: Invariant) -> Bool {
            self.store == store && self.invariant == invariant && (self.scenario.map { $0 == scenario } ?? true)
        }

        /// `actor-naive I13 in sign-out-race`, `actor-naive I1 in any scenario`.
        public var shown: String { "\(store) \(invariant.id) in \(scenario ?? "any scenario")" }
    }

    /// An expectation that did not happen in any run that could have shown it.
    public struct Stale: Sendable, Equatable, Codable {
        public var expectation: Expectation
        /// The scenarios of the store that ran to a verdict without it.
        public var scenarios: [String]
    }

    public var expectations: [Expectation]
    /// The file, as its errors and the stale lines name it.
    public var path: String

    public init(_ expectations: [Expectation], path: String = "the expectations file") {
        self.expectations = expectations
        self.path = path
    }

    /// Marks the results whose violations are all expected `known`, and names the known ones in
    /// each result that has any; returns the stale expectations (``stale(in:)``).
    public func apply(to results: inout [ScenarioResult]) -> [Stale] {
        mark(&results)
        return stale(in: results)
    }

    /// Names each result's expected violations (beside any it already names: the file adds, never
    /// replaces), and makes a result whose every violation is expected `known`. Hangs, crashes
    /// and errors are never expected: a result with one keeps its verdict.
    public func mark(_ results: inout [ScenarioResult]) {
        for index in results.indices {
            var result = results[index]
            var known = result.known ?? []
            for violation in result.violations where !known.contains(where: { $0.invariant == violation.invariant }) {
                guard
                    let line = expectations.first(where: {
                        $0.covers(store: result.store, scenario: result.scenario, violation.invariant)
                    })
                else { continue }
                known.append(
                    ScenarioResult.Known(
                        invariant: violation.invariant, summary: violation.summary, reason: line.reason))
            }
            guard !known.isEmpty else { continue }
            result.known = known
            if result.verdict == .violated, result.isAllKnown { result.verdict = .known }
            results[index] = result
        }
    }

    /// The expectations that did not happen in any of `results` that could have shown them: a
    /// run of the expectation's store (and scenario) that reached a verdict. One that says
    /// `sometimes` is never stale.
    public func stale(in results: [ScenarioResult]) -> [Stale] {
        expectations.compactMap { expectation -> Stale? in
            guard !expectation.sometimes else { return nil }
            let its = results.filter { result in
                result.store == expectation.store && (expectation.scenario.map { $0 == result.scenario } ?? true)
            }
            // Seen in any run, even one that then hung, it happened.
            guard !its.contains(where: { $0.violations.contains { $0.invariant == expectation.invariant } }) else {
                return nil
            }
            let ran = its.filter { [.pass, .violated, .known].contains($0.verdict) }
            return ran.isEmpty ? nil : Stale(expectation: expectation, scenarios: ran.map(\.scenario).firstSeen())
        }
    }

    /// `stale expectation: actor-naive I13 in any scenario did not happen (expiry-storm, 401-storm): remove it from FILE, …`.
    public static func describe(_ stale: Stale, file: String) -> String {
        "stale expectation: \(stale.expectation.shown) did not happen (\(stale.scenarios.joined(separator: ", "))): "
            + "remove it from \(file), or find out what changed"
    }

    /// What a store's declared capabilities make expected (``StoreDescriptor/refreshesUnconditionallyOn401``):
    /// `sometimes`, as a run that sends no stale 401 says nothing against a declaration.
    public static func declared(by store: StoreDescriptor) -> Expectations? {
        guard store.refreshesUnconditionallyOn401 else { return nil }
        return Expectations(
            [
                .init(
                    store: store.name, invariant: .staleRejectionDoesNotRefresh, reason: unconditional401,
                    sometimes: true)
            ],
            path: "the store's declaration")
    }

    /// The reason a declared "refreshes unconditionally on 401" gives for its I6.
    public static let unconditional401 =
        "declared: the store refreshes on every 401, not only for its current token (StoreDescriptor.refreshesUnconditionallyOn401)"
}

extension Expectations {
    /// Reads an expectations file strictly: an unknown key, store, scenario or invariant id, or
    /// an expectation without a reason, is an error naming the file and the key.
    public static func load(path: String, knownStores: [String]) throws(ThresholdsError) -> Expectations {
        try parse(try Thresholds.read(path, what: "expectations file"), path: path, knownStores: knownStores)
    }

    public static func parse(_ data: Data, path: String, knownStores: [String]) throws(ThresholdsError) -> Expectations
    {
        let shown = Printable.name(path)
        let root: JSONValue
        do { root = try StrictJSON.parse(Array(data)) } catch {
            throw ThresholdsError(path: shown, key: "(file)", problem: "is not valid JSON: \(error)")
        }
        let reader = Thresholds.Reader(path: shown)
        let top = try reader.object(root, at: "(top level)")
        try reader.onlyKeys(top, ["version", "expect"], at: "")
        guard let version = root["version"] else { throw reader.fail("version", "is missing; write \"version\": 1") }
        guard try reader.int(version, at: "version") == 1 else { throw reader.fail("version", "must be 1") }
        guard let list = root["expect"] else {
            throw reader.fail("expect", "is missing; give a list of {\"store\", \"invariant\", \"reason\"} objects")
        }
        guard case .array(let items) = list else { throw reader.fail("expect", "must be a list") }
        var expectations: [Expectation] = []
        for (index, item) in items.enumerated() {
            let at = "expect[\(index)]"
            let object = try reader.object(item, at: at)
            try reader.onlyKeys(object, ["store", "invariant", "scenario", "reason", "sometimes"], at: at)
            guard let store = item["store"] else { throw reader.fail("\(at).store", "is missing; name the store") }
            let name = try reader.string(store, at: "\(at).store")
            guard knownStores.contains(name) else {
                throw reader.fail(
                    "\(at).store", "unknown store '\(Printable.name(name))'; `session-bench list` names them")
            }
            guard let invariant = item["invariant"] else {
                throw reader.fail("\(at).invariant", "is missing; give an invariant id such as \"I1\"")
            }
            let id = try reader.string(invariant, at: "\(at).invariant")
            guard let parsed = Invariant.allCases.first(where: { $0.id == id }) else {
                throw reader.fail(
                    "\(at).invariant",
                    "'\(Printable.name(id))' is not an invariant id; write one such as \"I1\" (`session-bench list` names them)"
                )
            }
            var scenario: String?
            if let value = item["scenario"] {
                let text = try reader.string(value, at: "\(at).scenario")
                guard (try? ScenarioCatalog.resolved(text)) != nil else {
                    throw reader.fail("\(at).scenario", "unknown scenario '\(Printable.name(text))'")
                }
                scenario = text
            }
            guard let reason = item["reason"] else {
                throw reader.fail("\(at).reason", "is missing; say why this violation is expected")
            }
            let why = try reader.string(reason, at: "\(at).reason")
            guard !why.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw reader.fail("\(at).reason", "is empty; say why this violation is expected")
            }
            var sometimes = false
            if let value = item["sometimes"] {
                guard case .bool(let flag) = value else {
                    throw reader.fail("\(at).sometimes", "must be true or false (got \(value.kindName))")
                }
                sometimes = flag
            }
            let expectation = Expectation(
                store: name, invariant: parsed, scenario: scenario, reason: why, sometimes: sometimes)
            guard
                !expectations.contains(where: { $0.store == name && $0.invariant == parsed && $0.scenario == scenario })
            else {
                throw reader.fail(at, "repeats an earlier expectation (\(expectation.shown)); keep one")
            }
            expectations.append(expectation)
        }
        return Expectations(expectations, path: shown)
    }
}
