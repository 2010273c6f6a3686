import Foundation

/// Reading a thresholds file strictly: unknown keys, wrong types and impossible limits are
/// errors that name the key, so a typo never silently disables a check.
extension Thresholds {
    public static func load(path: String, knownStores: [String]) throws(ThresholdsError) -> Thresholds {
        return try parse(try read(path), path: path, knownStores: knownStores)
    }

    /// The file's bytes: a regular file (or a pipe, as `<(...)` gives) of at most 1 MiB, so
    /// a device like /dev/zero is an error, not a run that never starts.
    static func read(_ path: String) throws(ThresholdsError) -> Data {
        let shown = Printable.name(path)
        func fail(_ problem: String) -> ThresholdsError {
            ThresholdsError(path: shown, key: "(file)", problem: problem)
        }
        let limit = 1 << 20
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else {
            throw fail("cannot be read (\(String(cString: strerror(errno)))); check the path")
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw fail("cannot be read (\(String(cString: strerror(errno))))") }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFIFO: _ = fcntl(descriptor, F_SETFL, 0)  // read a pipe to its end, blocking
        case S_IFDIR: throw fail("is a directory; give the thresholds file")
        default: throw fail("is not a regular file; give the thresholds file")
        }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = Foundation.read(descriptor, &buffer, buffer.count)
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw fail("cannot be read (\(String(cString: strerror(errno))))") }
            if count == 0 { break }
            data.append(contentsOf: buffer[0..<count])
            guard data.count <= limit else { throw fail("is larger than 1 MiB; a thresholds file is a few kilobytes") }
        }
        return data
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
                ["stores", "scenarios", "duration", "rounds", "tasks", "seed", "allocator", "allocation_counter"],
                at: "run")
            if let stores = run["stores"] {
                thresholds.run.stores = try reader.strings(stores, at: "run.stores")
                for (index, name) in thresholds.run.stores.enumerated() where !knownStores.contains(name) {
                    throw reader.fail("run.stores[\(index)]", "unknown store '\(Printable.name(name))'")
                }
            }
            if let scenarios = run["scenarios"] {
                thresholds.run.scenarios = try reader.strings(scenarios, at: "run.scenarios")
                for (index, name) in thresholds.run.scenarios.enumerated()
                where !ScenarioCatalog.all.contains(where: { $0.name == name }) {
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
            if let tasks = run["tasks"] {
                thresholds.run.tasks = try reader.int(tasks, at: "run.tasks", in: InputRange.tasks)
            }
            if let seed = run["seed"] { thresholds.run.seed = try reader.seed(seed, at: "run.seed") }
            if let allocator = run["allocator"] {
                let text = try reader.string(allocator, at: "run.allocator")
                guard let kind = AllocatorKind(rawValue: text) else {
                    throw reader.fail(
                        "run.allocator",
                        "unknown allocator '\(Printable.name(text))'; known: \(AllocatorKind.allCases.map(\.rawValue).joined(separator: ", "))"
                    )
                }
                thresholds.run.allocator = kind
            }
            if let counter = run["allocation_counter"] {
                let text = try reader.string(counter, at: "run.allocation_counter")
                guard let kind = AllocationCounterKind(rawValue: text) else {
                    throw reader.fail(
                        "run.allocation_counter",
                        "unknown counter '\(Printable.name(text))'; known: \(AllocationCounterKind.allCases.map(\.rawValue).joined(separator: ", "))"
                    )
                }
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

    private struct Reader {
        let path: String

        func fail(_ key: String, _ problem: String) -> ThresholdsError {
            ThresholdsError(path: path, key: key, problem: problem)
        }

        func object(_ value: JSONValue, at key: String) throws(ThresholdsError) -> [(key: String, value: JSONValue)] {
            guard case .object(let members) = value else {
                throw fail(key, "must be an object (got \(value.kindName))")
            }
            return members
        }

        func onlyKeys(_ members: [(key: String, value: JSONValue)], _ allowed: [String], at key: String)
            throws(ThresholdsError)
        {
            for name in members.map(\.key) where !allowed.contains(name) {
                let shown = Printable.name(name)
                throw fail(
                    key.isEmpty ? shown : "\(key).\(shown)",
                    "unknown key; expected one of \(allowed.joined(separator: ", "))")
            }
        }

        func string(_ value: JSONValue, at key: String) throws(ThresholdsError) -> String {
            guard case .string(let string) = value else { throw fail(key, "must be a string (got \(value.kindName))") }
            return string
        }

        func strings(_ value: JSONValue, at key: String) throws(ThresholdsError) -> [String] {
            guard case .array(let list) = value else {
                throw fail(key, "must be a list of strings (got \(value.kindName))")
            }
            var strings: [String] = []
            for (index, item) in list.enumerated() { strings.append(try string(item, at: "\(key)[\(index)]")) }
            return strings
        }

        func number(_ value: JSONValue, at key: String) throws(ThresholdsError) -> Double {
            guard case .number(let text) = value else { throw fail(key, "must be a number (got \(value.kindName))") }
            guard let number = Double(text), number.isFinite else { throw fail(key, "\(text) is too large a number") }
            return number
        }

        func int(_ value: JSONValue, at key: String) throws(ThresholdsError) -> Int {
            let number = try self.number(value, at: key)
            guard number == number.rounded(), abs(number) < 1e15 else { throw fail(key, "must be a whole number") }
            return Int(number)
        }

        func int(_ value: JSONValue, at key: String, in range: ClosedRange<Int>) throws(ThresholdsError) -> Int {
            let number = try self.number(value, at: key)
            guard number == number.rounded() else { throw fail(key, "must be a whole number") }
            guard number >= Double(range.lowerBound), number <= Double(range.upperBound) else {
                throw fail(key, "must be \(InputRange.text(range)) (got \(InputRange.text(number)))")
            }
            return Int(number)
        }

        /// A seed: any whole number from 0 to 2^64-1, as `--seed` takes.
        func seed(_ value: JSONValue, at key: String) throws(ThresholdsError) -> UInt64 {
            guard case .number(let text) = value else { throw fail(key, "must be a number (got \(value.kindName))") }
            guard let seed = NumberText.unsigned(text) else {
                throw fail(key, "must be a whole number from 0 to \(UInt64.max), written in digits (got \(text))")
            }
            return seed
        }

        func limit(_ value: JSONValue, at key: String, knownStores: [String]) throws(ThresholdsError)
            -> Thresholds.Limit
        {
            let members = try self.object(value, at: key)
            let object = Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
            try onlyKeys(
                members, ["metric", "store", "scenario", "operation", "max", "min", "max_ratio", "min_ratio", "of"],
                at: key)
            guard let metricName = object["metric"] else { throw fail("\(key).metric", "is missing") }
            let metricText = try string(metricName, at: "\(key).metric")
            guard let metric = Metric(rawValue: metricText) else {
                throw fail(
                    "\(key).metric",
                    "unknown metric '\(Printable.name(metricText))'; known: \(Metric.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            let store =
                try object["store"].map { v throws(ThresholdsError) in try string(v, at: "\(key).store") } ?? "*"
            if store != "*", !knownStores.contains(store) {
                throw fail("\(key).store", "unknown store '\(Printable.name(store))'")
            }
            let scenario =
                try object["scenario"].map { v throws(ThresholdsError) in try string(v, at: "\(key).scenario") } ?? "*"
            if scenario != "*", !ScenarioCatalog.all.contains(where: { $0.name == scenario }) {
                throw fail("\(key).scenario", "unknown scenario '\(Printable.name(scenario))'")
            }
            var operation: OperationKind?
            if let op = object["operation"] {
                let text = try string(op, at: "\(key).operation")
                guard let kind = OperationKind(rawValue: text) else {
                    throw fail(
                        "\(key).operation",
                        "unknown operation '\(Printable.name(text))'; known: \(OperationKind.allCases.map(\.rawValue).joined(separator: ", "))"
                    )
                }
                operation = kind
            }
            let bounds = ["max", "min", "max_ratio", "min_ratio"].filter { object[$0] != nil }
            guard bounds.count == 1 else {
                throw fail(
                    key,
                    "needs exactly one of max, min, max_ratio, min_ratio (has \(bounds.isEmpty ? "none" : bounds.joined(separator: ", ")))"
                )
            }
            let boundKey = bounds[0]
            let limit = try number(object[boundKey]!, at: "\(key).\(boundKey)")
            let bound: Thresholds.Bound
            switch boundKey {
            case "max", "min":
                guard metric.isCount else {
                    throw fail(
                        "\(key).\(boundKey)",
                        "'\(metric.rawValue)' is a timing; gate it with max_ratio or min_ratio against a figure from the same run"
                    )
                }
                guard object["of"] == nil else { throw fail("\(key).of", "only ratios take 'of'") }
                bound = boundKey == "max" ? .max(limit) : .min(limit)
            default:
                guard limit > 0 else { throw fail("\(key).\(boundKey)", "must be positive") }
                guard let of = object["of"] else {
                    throw fail("\(key).of", "is missing; a ratio needs something to divide by")
                }
                let reference = try self.reference(
                    of, at: "\(key).of", metric: metric, operation: operation, knownStores: knownStores)
                bound = boundKey == "max_ratio" ? .maxRatio(limit, of: reference) : .minRatio(limit, of: reference)
            }
            return Thresholds.Limit(
                metric: metric, store: store, scenario: scenario, operation: operation, bound: bound, location: key)
        }

        func reference(
            _ value: JSONValue, at key: String, metric: Metric, operation: OperationKind?, knownStores: [String]
        ) throws(ThresholdsError) -> Thresholds.Reference {
            let members = try self.object(value, at: key)
            let object = Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
            try onlyKeys(members, ["store", "scenario", "baseline"], at: key)
            if let baseline = object["baseline"] {
                guard object.count == 1 else { throw fail(key, "a baseline stands alone (no store or scenario)") }
                switch try string(baseline, at: "\(key).baseline") {
                case "harness_overhead_ns":
                    guard metric.isLatency else {
                        throw fail("\(key).baseline", "harness_overhead_ns compares with latencies only")
                    }
                    return .harnessOverhead
                case "empty_store", "bare_loop":
                    guard metric == .throughput else {
                        throw fail("\(key).baseline", "this baseline compares with throughput_ops_per_s only")
                    }
                    return try string(baseline, at: "\(key).baseline") == "empty_store" ? .emptyStore : .bareLoop
                case "plain_load":
                    guard metric == .throughput, operation == .syncRead else {
                        throw fail(
                            "\(key).baseline",
                            "plain_load compares with throughput_ops_per_s of operation sync-read only")
                    }
                    return .plainLoad
                case let other:
                    throw fail(
                        "\(key).baseline",
                        "unknown baseline '\(Printable.name(other))'; known: harness_overhead_ns, empty_store, bare_loop, plain_load"
                    )
                }
            }
            let store = try object["store"].map { v throws(ThresholdsError) in try string(v, at: "\(key).store") }
            if let store, !knownStores.contains(store) {
                throw fail("\(key).store", "unknown store '\(Printable.name(store))'")
            }
            let scenario = try object["scenario"].map { v throws(ThresholdsError) in
                try string(v, at: "\(key).scenario")
            }
            if let scenario, !ScenarioCatalog.all.contains(where: { $0.name == scenario }) {
                throw fail("\(key).scenario", "unknown scenario '\(Printable.name(scenario))'")
            }
            guard store != nil || scenario != nil else { throw fail(key, "name a store, a scenario or a baseline") }
            return .result(store: store, scenario: scenario)
        }
    }
}
