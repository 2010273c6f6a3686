import Foundation
import SessionMeasurement

/// Reading a thresholds file strictly: unknown keys, wrong types and impossible limits are
/// errors that name the key, so a typo never silently disables a check.
extension Thresholds {
    public static func load(path: String, knownStores: [String]) throws(ThresholdsError) -> Thresholds {
        return try parse(try read(path), path: path, knownStores: knownStores)
    }

    /// The file's bytes: a regular file of at most 1 MiB (``InputFile``), so a FIFO or a
    /// device like /dev/zero is an error, not a run that never starts.
    static func read(_ path: String, what: String = "thresholds file") throws(ThresholdsError) -> Data {
        do throws(InputFile.Refusal) {
            return try InputFile.read(path, what: "the \(what)", limit: 1 << 20)
        } catch {
            throw ThresholdsError(path: Printable.name(path), key: "(file)", problem: error.problem)
        }
    }

    public static func parse(_ data: Data, path: String, knownStores: [String]) throws(ThresholdsError) -> Thresholds {
        let root: JSONValue
        do { root = try StrictJSON.parse(Array(data)) } catch {
            throw ThresholdsError(path: path, key: "(file)", problem: "is not valid JSON: \(error)")
        }
        let reader = Reader(path: path)
        let top = try reader.object(root, at: "(top level)")
        try reader.onlyKeys(top, ["version", "run", "limits"], at: "")
        guard let version = root["version"] else { throw reader.fail("version", "is missing; write \"version\": 1") }
        guard try reader.int(version, at: "version") == 1 else { throw reader.fail("version", "must be 1") }

        var thresholds = Thresholds()
        if let run = root["run"] {
            let object = try reader.object(run, at: "run")
            try reader.onlyKeys(
                object,
                [
                    "stores", "scenarios", "duration", "rounds", "scenario_rounds", "tasks", "seed", "allocator",
                    "allocation_counter",
                ],
                at: "run")
            if let stores = run["stores"] {
                thresholds.run.stores = try reader.strings(stores, at: "run.stores")
                guard !thresholds.run.stores.isEmpty else {
                    throw reader.fail(
                        "run.stores",
                        "is empty; name at least one store, or leave the key out to run every correct store")
                }
                for (index, name) in thresholds.run.stores.enumerated() where !knownStores.contains(name) {
                    throw reader.fail("run.stores[\(index)]", "unknown store '\(Printable.name(name))'")
                }
            }
            if let scenarios = run["scenarios"] {
                thresholds.run.scenarios = try reader.strings(scenarios, at: "run.scenarios")
                guard !thresholds.run.scenarios.isEmpty else {
                    throw reader.fail(
                        "run.scenarios", "is empty; name at least one scenario, or leave the key out to run every one")
                }
                for (index, name) in thresholds.run.scenarios.enumerated()
                where (try? ScenarioCatalog.resolved(name)) == nil {
                    throw reader.fail("run.scenarios[\(index)]", "unknown scenario '\(Printable.name(name))'")
                }
            }
            if let duration = run["duration"] {
                let text = try reader.string(duration, at: "run.duration")
                guard let seconds = DurationText.seconds(text) else {
                    throw reader.fail(
                        "run.duration", "'\(Printable.name(text))' is not a duration; write \(DurationText.help)")
                }
                guard InputRange.durationSeconds.contains(seconds) else {
                    throw reader.fail("run.duration", "must be between 1ms and 1h (got \(Printable.name(text)))")
                }
                thresholds.run.duration = text
            }
            if let rounds = run["rounds"] {
                thresholds.run.rounds = try reader.int(rounds, at: "run.rounds", in: InputRange.rounds)
            }
            if let perScenario = run["scenario_rounds"] {
                for (name, value) in try reader.object(perScenario, at: "run.scenario_rounds") {
                    let key = "run.scenario_rounds.\(Printable.name(name))"
                    guard let resolved = try? ScenarioCatalog.resolved(name) else {
                        throw reader.fail(key, "unknown scenario '\(Printable.name(name))'")
                    }
                    guard resolved.allSatisfy(\.isRoundBased) else {
                        throw reader.fail(key, "\(Printable.name(name)) runs for a duration, not rounds; leave it out")
                    }
                    if !thresholds.run.scenarios.isEmpty, !thresholds.run.scenarios.contains(name) {
                        throw reader.fail(key, "is not among run.scenarios; add it there, or leave it out")
                    }
                    thresholds.run.scenarioRounds[name] = try reader.int(value, at: key, in: InputRange.rounds)
                }
            }
            if let tasks = run["tasks"] {
                thresholds.run.tasks = try reader.int(tasks, at: "run.tasks", in: InputRange.tasks)
            }
            if let seed = run["seed"] { thresholds.run.seed = try reader.seed(seed, at: "run.seed") }
            if let allocator = run["allocator"] {
                thresholds.run.allocator = try reader.choice(allocator, at: "run.allocator", naming: "allocator")
            }
            if let counter = run["allocation_counter"] {
                let kind: AllocationCounterKind = try reader.choice(
                    counter, at: "run.allocation_counter", naming: "counter")
                if kind == .jemalloc, (thresholds.run.allocator ?? .system) != .jemalloc {
                    throw reader.fail(
                        "run.allocation_counter", "jemalloc counts need \"allocator\": \"jemalloc\" in run")
                }
                thresholds.run.allocationCounter = kind
            }
        }
        guard let limits = root["limits"] else { throw reader.fail("limits", "is missing; give a list of limits") }
        guard case .array(let list) = limits else { throw reader.fail("limits", "must be a list") }
        for (index, item) in list.enumerated() {
            thresholds.limits.append(try reader.limit(item, at: "limits[\(index)]", knownStores: knownStores))
        }
        return thresholds
    }
}
