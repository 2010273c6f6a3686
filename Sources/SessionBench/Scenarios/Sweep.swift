import Foundation
import SessionMeasurement
import TokenServer

/// What `sweep` varies, and how a value changes a scenario.
public enum SweepParameter: String, Sendable, Codable, CaseIterable {
    /// Concurrent callers.
    case tasks
    /// Reads between two 401s of one caller (steady scenarios: a read/write mix).
    case readersPerWriter = "readers-per-writer"
    /// The server's refresh latency, in milliseconds (fixed).
    case refreshLatency = "refresh-latency"
    /// Access-token lifetime, in milliseconds.
    case tokenLifetime = "token-lifetime"
    /// Open-loop arrival rate, calls per second across all callers (steady scenarios).
    case rate
    /// The allocator of the measuring processes; its values are names (`system,jemalloc`),
    /// and the command line, not the scenario, applies them.
    case allocator

    /// Whether the values are names rather than numbers.
    public var takesNames: Bool { self == .allocator }

    /// The scenario a sweep of this parameter runs when none is named.
    public var defaultScenario: String {
        switch self {
        case .refreshLatency: "expiry-storm"
        default: "steady-reads"
        }
    }

    /// `scenario` with the parameter set to `value`, validated.
    public func apply(_ value: Double, to scenario: Scenario) throws(ScenarioError) -> Scenario {
        var scenario = scenario
        switch self {
        case .tasks:
            guard value >= 1, value <= Double(InputRange.tasks.upperBound), value == value.rounded() else {
                throw .invalid(
                    "tasks must be whole numbers \(InputRange.text(InputRange.tasks)) (got \(InputRange.text(value)))")
            }
            scenario = ScenarioOverrides(tasks: Int(value)).applied(to: scenario)
        case .readersPerWriter:
            guard scenario.kind == .steadyReads else {
                throw .invalid("readers-per-writer applies to steady-reads only")
            }
            guard value >= 1, value <= Double(InputRange.readersPerWriter.upperBound), value == value.rounded() else {
                throw .invalid(
                    "readers per writer must be whole numbers \(InputRange.text(InputRange.readersPerWriter)) (got \(InputRange.text(value)))"
                )
            }
            scenario.readersPerWriter = Int(value)
        case .refreshLatency:
            guard InputRange.latencyMilliseconds.contains(value) else {
                throw .invalid(
                    "refresh latency must be milliseconds \(InputRange.text(InputRange.latencyMilliseconds)) (got \(InputRange.text(value)))"
                )
            }
            scenario.latency = value == 0 ? .none : .fixed(.nanoseconds(Int64(value * 1e6)))
        case .tokenLifetime:
            guard InputRange.lifetimeMilliseconds.contains(value) else {
                throw .invalid(
                    "token lifetime must be milliseconds \(InputRange.text(InputRange.lifetimeMilliseconds)) (got \(InputRange.text(value)))"
                )
            }
            scenario.tokenLifetime = .nanoseconds(Int64(value * 1e6))
        case .rate:
            guard scenario.kind == .steadyReads else { throw .invalid("rate applies to steady-reads only") }
            guard InputRange.rate.contains(value) else {
                throw .invalid(
                    "rate must be calls per second \(InputRange.text(InputRange.rate)) (got \(InputRange.text(value)))")
            }
            scenario.arrivalRate = value
        case .allocator:
            break  // not a scenario parameter: the measuring process is started for it
        }
        try scenario.validate()
        return scenario
    }
}

/// Where a result sits in a sweep.
public struct SweepPoint: Sendable, Codable, Hashable {
    public let parameter: SweepParameter
    public let value: Double
    /// Which pass over all values and stores, from 0.
    public let repeatIndex: Int
    /// The value's name, for a parameter whose values are names (`jemalloc`); `value` is then
    /// its position in the list.
    public var label: String?

    public init(parameter: SweepParameter, value: Double, repeatIndex: Int, label: String? = nil) {
        self.parameter = parameter
        self.value = value
        self.repeatIndex = repeatIndex
        self.label = label
    }

    /// The value as a person wrote it: its name, or the number.
    public var valueText: String { label ?? NumberText.compact(value) }
}

/// The order a sweep runs in: every repeat passes over every value, and at each point every
/// store runs once, in an order rotated from point to point, so that drift in the machine
/// (another tenant, thermal state) lands on all stores alike.
public enum SweepSchedule {
    public static func order<Store>(stores: [Store], values: [Double], repeats: Int) -> [(
        repeatIndex: Int, value: Double, store: Store
    )] {
        var order: [(Int, Double, Store)] = []
        var rotation = 0
        for repeatIndex in 0..<repeats {
            for value in values {
                for offset in stores.indices {
                    order.append((repeatIndex, value, stores[(offset + rotation) % stores.count]))
                }
                rotation += 1
            }
        }
        return order
    }
}
