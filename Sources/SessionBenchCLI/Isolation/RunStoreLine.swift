import Foundation
import SessionBench

/// One message between an isolated run and its measuring child (`session-bench run-store`), as a
/// ``ProcessLine`` like every message between the harness's processes.
enum RunStoreLine {
    /// Parent → child, its one line: what to run.
    case plan(IsolatedRun.Plan)
    /// Child → parent: a scenario starts, so the parent knows which one was under way if the
    /// child dies or stops answering.
    case started(scenario: String)
    /// Child → parent: a scenario's result.
    case result(ScenarioResult)

    private struct Wire: Codable {
        var type: String
        var plan: IsolatedRun.Plan?
        var scenario: String?
        var result: ScenarioResult?
    }

    /// The line, without its newline.
    var line: String {
        switch self {
        case .plan(let plan): ProcessLine.encode(Wire(type: "plan", plan: plan))
        case .started(let scenario): ProcessLine.encode(Wire(type: "started", scenario: scenario))
        case .result(let result): ProcessLine.encode(Wire(type: "result", result: result))
        }
    }

    /// The message a line holds, or `nil` for any other line.
    init?(line: String) {
        guard let wire = ProcessLine.decode(line, as: Wire.self) else { return nil }
        switch wire.type {
        case "plan":
            guard let plan = wire.plan else { return nil }
            self = .plan(plan)
        case "started":
            guard let scenario = wire.scenario else { return nil }
            self = .started(scenario: scenario)
        case "result":
            guard let result = wire.result else { return nil }
            self = .result(result)
        default: return nil
        }
    }
}
