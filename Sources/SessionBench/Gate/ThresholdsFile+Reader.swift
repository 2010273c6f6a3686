import SessionOracle

extension Thresholds {
    /// Reads a thresholds file's values, naming the file and the key in every error.
    struct Reader {
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

        /// One of `Choice`'s names; an unknown one is an error that lists the known ones.
        func choice<Choice: RawRepresentable & CaseIterable>(
            _ value: JSONValue, at key: String, naming what: String
        ) throws(ThresholdsError) -> Choice where Choice.RawValue == String {
            let text = try string(value, at: key)
            guard let choice = Choice(rawValue: text) else {
                let known = Choice.allCases.map(\.rawValue).joined(separator: ", ")
                throw fail(key, "unknown \(what) '\(Printable.name(text))'; known: \(known)")
            }
            return choice
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

        /// A whole number written as one: digits, with a minus sign at most (`100`, not `100.0` or
        /// `1e2`), as the command line takes it.
        func int(_ value: JSONValue, at key: String) throws(ThresholdsError) -> Int {
            let number = try whole(value, at: key)
            guard abs(number) < 1e15 else { throw fail(key, "must be a whole number") }
            return Int(number)
        }

        func int(_ value: JSONValue, at key: String, in range: ClosedRange<Int>) throws(ThresholdsError) -> Int {
            let number = try whole(value, at: key)
            guard number >= Double(range.lowerBound), number <= Double(range.upperBound) else {
                throw fail(key, "must be \(InputRange.text(range)) (got \(InputRange.text(number)))")
            }
            return Int(number)
        }

        private func whole(_ value: JSONValue, at key: String) throws(ThresholdsError) -> Double {
            let number = try self.number(value, at: key)
            let text = if case .number(let text) = value { text } else { "" }
            guard NumberText.unsigned(text.hasPrefix("-") ? String(text.dropFirst()) : text) != nil else {
                throw fail(key, "must be a whole number written in digits (got \(Printable.name(text)))")
            }
            return number
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
            guard let metric = Metric.named(metricText) else {
                throw fail(
                    "\(key).metric",
                    "unknown metric '\(Printable.name(metricText))'; known: \(Metric.all.map(\.name).joined(separator: ", "))"
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
                        "'\(metric.name)' is a timing; gate it with max_ratio or min_ratio against a figure from the same run"
                    )
                }
                guard object["of"] == nil else { throw fail("\(key).of", "only ratios take 'of'") }
                guard boundKey == "min" || limit >= 0 else {
                    throw fail(
                        "\(key).max", "must be 0 or more: '\(metric.name)' is never negative, so no run could pass")
                }
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
                case "plain_load", "clocked_load":
                    let name = try string(baseline, at: "\(key).baseline")
                    guard metric == .throughput, operation == .syncRead else {
                        throw fail(
                            "\(key).baseline",
                            "\(name) compares with throughput_ops_per_s of operation sync-read only")
                    }
                    return name == "plain_load" ? .plainLoad : .clockedLoad
                case let other:
                    throw fail(
                        "\(key).baseline",
                        "unknown baseline '\(Printable.name(other))'; known: harness_overhead_ns, empty_store, bare_loop, plain_load, clocked_load"
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
