import Foundation

/// Reading a thresholds file strictly: unknown keys, wrong types and impossible limits are
/// errors that name the key, so a typo never silently disables a check.
extension Thresholds {
    public static func load(path: String, knownStores: [String]) throws(ThresholdsError) -> Thresholds {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ThresholdsError(path: path, key: "(file)", problem: "cannot be read; check the path")
        }
        return try parse(data, path: path, knownStores: knownStores)
    }

    public static func parse(_ data: Data, path: String, knownStores: [String]) throws(ThresholdsError) -> Thresholds {
        let root: Any
        do { root = try JSONSerialization.jsonObject(with: data) } catch {
            throw ThresholdsError(path: path, key: "(file)", problem: "is not valid JSON: \(Self.reason(error))")
        }
        let reader = Reader(path: path)
        let top = try reader.object(root, at: "(top level)")
        try reader.onlyKeys(top, ["version", "run", "limits"], at: "")
        guard let version = top["version"] else { throw reader.fail("version", "is missing; write \"version\": 1") }
        guard try reader.int(version, at: "version") == 1 else { throw reader.fail("version", "must be 1") }

        var thresholds = Thresholds()
        if let run = top["run"] {
            let object = try reader.object(run, at: "run")
            try reader.onlyKeys(object, ["stores", "scenarios", "duration", "rounds", "tasks", "seed"], at: "run")
            if let stores = object["stores"] {
                thresholds.run.stores = try reader.strings(stores, at: "run.stores")
                for (index, name) in thresholds.run.stores.enumerated() where !knownStores.contains(name) {
                    throw reader.fail("run.stores[\(index)]", "unknown store '\(name)'")
                }
            }
            if let scenarios = object["scenarios"] {
                thresholds.run.scenarios = try reader.strings(scenarios, at: "run.scenarios")
                for (index, name) in thresholds.run.scenarios.enumerated() where !ScenarioCatalog.all.contains(where: { $0.name == name }) {
                    throw reader.fail("run.scenarios[\(index)]", "unknown scenario '\(name)'")
                }
            }
            if let duration = object["duration"] { thresholds.run.duration = try reader.string(duration, at: "run.duration") }
            if let rounds = object["rounds"] { thresholds.run.rounds = try reader.positive(rounds, at: "run.rounds") }
            if let tasks = object["tasks"] { thresholds.run.tasks = try reader.positive(tasks, at: "run.tasks") }
            if let seed = object["seed"] { thresholds.run.seed = UInt64(try reader.positive(seed, at: "run.seed")) }
        }
        guard let limits = top["limits"] else { throw reader.fail("limits", "is missing; give a list of limits") }
        guard let list = limits as? [Any] else { throw reader.fail("limits", "must be a list") }
        for (index, item) in list.enumerated() {
            thresholds.limits.append(try reader.limit(item, at: "limits[\(index)]", knownStores: knownStores))
        }
        return thresholds
    }

    static func reason(_ error: Error) -> String {
        let text = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)"
        return text.split(separator: "\n").first.map(String.init) ?? text
    }

    private struct Reader {
        let path: String

        func fail(_ key: String, _ problem: String) -> ThresholdsError {
            ThresholdsError(path: path, key: key, problem: problem)
        }

        func object(_ value: Any, at key: String) throws(ThresholdsError) -> [String: Any] {
            guard let object = value as? [String: Any] else { throw fail(key, "must be an object") }
            return object
        }

        func onlyKeys(_ object: [String: Any], _ allowed: [String], at key: String) throws(ThresholdsError) {
            for name in object.keys.sorted() where !allowed.contains(name) {
                throw fail(key.isEmpty ? name : "\(key).\(name)", "unknown key; expected one of \(allowed.joined(separator: ", "))")
            }
        }

        func string(_ value: Any, at key: String) throws(ThresholdsError) -> String {
            guard let string = value as? String else { throw fail(key, "must be a string") }
            return string
        }

        func strings(_ value: Any, at key: String) throws(ThresholdsError) -> [String] {
            guard let list = value as? [String] else { throw fail(key, "must be a list of strings") }
            return list
        }

        func number(_ value: Any, at key: String) throws(ThresholdsError) -> Double {
            // Booleans arrive as NSNumber too; their type encoding is "c".
            guard let number = value as? NSNumber, String(cString: number.objCType) != "c", number.doubleValue.isFinite else {
                throw fail(key, "must be a number")
            }
            return number.doubleValue
        }

        func int(_ value: Any, at key: String) throws(ThresholdsError) -> Int {
            let number = try self.number(value, at: key)
            guard number == number.rounded(), abs(number) < 1e15 else { throw fail(key, "must be a whole number") }
            return Int(number)
        }

        func positive(_ value: Any, at key: String) throws(ThresholdsError) -> Int {
            let number = try int(value, at: key)
            guard number >= 1 else { throw fail(key, "must be at least 1") }
            return number
        }

        func limit(_ value: Any, at key: String, knownStores: [String]) throws(ThresholdsError) -> Thresholds.Limit {
            let object = try self.object(value, at: key)
            try onlyKeys(object, ["metric", "store", "scenario", "operation", "max", "min", "max_ratio", "min_ratio", "of"], at: key)
            guard let metricName = object["metric"] else { throw fail("\(key).metric", "is missing") }
            let metricText = try string(metricName, at: "\(key).metric")
            guard let metric = Metric(rawValue: metricText) else {
                throw fail("\(key).metric", "unknown metric '\(metricText)'; known: \(Metric.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            let store = try object["store"].map { v throws(ThresholdsError) in try string(v, at: "\(key).store") } ?? "*"
            if store != "*", !knownStores.contains(store) { throw fail("\(key).store", "unknown store '\(store)'") }
            let scenario = try object["scenario"].map { v throws(ThresholdsError) in try string(v, at: "\(key).scenario") } ?? "*"
            if scenario != "*", !ScenarioCatalog.all.contains(where: { $0.name == scenario }) {
                throw fail("\(key).scenario", "unknown scenario '\(scenario)'")
            }
            var operation: OperationKind?
            if let op = object["operation"] {
                let text = try string(op, at: "\(key).operation")
                guard let kind = OperationKind(rawValue: text) else {
                    throw fail("\(key).operation", "unknown operation '\(text)'; known: \(OperationKind.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                operation = kind
            }
            let bounds = ["max", "min", "max_ratio", "min_ratio"].filter { object[$0] != nil }
            guard bounds.count == 1 else {
                throw fail(key, "needs exactly one of max, min, max_ratio, min_ratio (has \(bounds.isEmpty ? "none" : bounds.joined(separator: ", ")))")
            }
            let boundKey = bounds[0]
            let limit = try number(object[boundKey]!, at: "\(key).\(boundKey)")
            let bound: Thresholds.Bound
            switch boundKey {
            case "max", "min":
                guard metric.isCount else {
                    throw fail(
                        "\(key).\(boundKey)",
                        "'\(metric.rawValue)' is a timing; gate it with max_ratio or min_ratio against a figure from the same run")
                }
                guard object["of"] == nil else { throw fail("\(key).of", "only ratios take 'of'") }
                bound = boundKey == "max" ? .max(limit) : .min(limit)
            default:
                guard limit > 0 else { throw fail("\(key).\(boundKey)", "must be positive") }
                guard let of = object["of"] else { throw fail("\(key).of", "is missing; a ratio needs something to divide by") }
                let reference = try self.reference(of, at: "\(key).of", metric: metric, knownStores: knownStores)
                bound = boundKey == "max_ratio" ? .maxRatio(limit, of: reference) : .minRatio(limit, of: reference)
            }
            return Thresholds.Limit(
                metric: metric, store: store, scenario: scenario, operation: operation, bound: bound, location: key)
        }

        func reference(_ value: Any, at key: String, metric: Metric, knownStores: [String]) throws(ThresholdsError) -> Thresholds.Reference {
            let object = try self.object(value, at: key)
            try onlyKeys(object, ["store", "scenario", "baseline"], at: key)
            if let baseline = object["baseline"] {
                guard object.count == 1 else { throw fail(key, "a baseline stands alone (no store or scenario)") }
                switch try string(baseline, at: "\(key).baseline") {
                case "harness_overhead_ns":
                    guard metric.isLatency else { throw fail("\(key).baseline", "harness_overhead_ns compares with latencies only") }
                    return .harnessOverhead
                case "empty_store", "bare_loop":
                    guard metric == .throughput else { throw fail("\(key).baseline", "this baseline compares with throughput_ops_per_s only") }
                    return try string(baseline, at: "\(key).baseline") == "empty_store" ? .emptyStore : .bareLoop
                case let other:
                    throw fail("\(key).baseline", "unknown baseline '\(other)'; known: harness_overhead_ns, empty_store, bare_loop")
                }
            }
            let store = try object["store"].map { v throws(ThresholdsError) in try string(v, at: "\(key).store") }
            if let store, !knownStores.contains(store) { throw fail("\(key).store", "unknown store '\(store)'") }
            let scenario = try object["scenario"].map { v throws(ThresholdsError) in try string(v, at: "\(key).scenario") }
            if let scenario, !ScenarioCatalog.all.contains(where: { $0.name == scenario }) {
                throw fail("\(key).scenario", "unknown scenario '\(scenario)'")
            }
            guard store != nil || scenario != nil else { throw fail(key, "name a store, a scenario or a baseline") }
            return .result(store: store, scenario: scenario)
        }
    }
}
