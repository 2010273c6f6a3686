import Foundation
import SessionContract
import SessionStorage

/// How a ``SessionLine`` travels: a ``ProcessLine``, one JSON object per line.
extension SessionLine {
    private struct Wire: Codable {
        var type: String
        var id: Int?
        var text: String?
        var number: Int64?
        var count: Int?
        var generation: UInt64?
        var grant: StoredGrant?
        var plan: SessionProcessPlan?
        var round: SharedRound?
        var numbers: [Int64]?
    }

    private static let sessionErrors: [SessionError] = [
        .signedOut, .signInFailed, .refreshFailed, .refreshTokenRevoked, .cancelled,
    ]
    private static let endpointErrors: [TokenEndpointError] = [
        .transient, .timeout, .invalidGrant, .invalidCredentials,
    ]

    /// The line, without its newline.
    var encoded: String {
        let wire: Wire
        switch self {
        case .signInRequest(let id, let subject): wire = Wire(type: "sign-in", id: id, text: subject)
        case .refreshRequest(let id, let token): wire = Wire(type: "refresh", id: id, text: token)
        case .first(.success(let generation)): wire = Wire(type: "first", generation: generation)
        case .first(.failure(let error)): wire = Wire(type: "first-error", text: error.description)
        case .got(.success(let generation)): wire = Wire(type: "got", generation: generation)
        case .got(.failure(let error)): wire = Wire(type: "got-error", text: error.description)
        case .saved(let nanoseconds): wire = Wire(type: "saved", number: nanoseconds)
        case .reads(let count, let calls): wire = Wire(type: "reads", number: Int64(calls), count: count)
        case .signedOut: wire = Wire(type: "signed-out")
        case .done: wire = Wire(type: "done")
        case .answered(let instance, .success(let generation), let nanoseconds):
            wire = Wire(type: "answered", id: instance, number: nanoseconds, generation: generation)
        case .answered(let instance, .failure(let error), let nanoseconds):
            wire = Wire(type: "answered-error", id: instance, text: error.description, number: nanoseconds)
        case .roundDone(let index): wire = Wire(type: "round-done", id: index)
        case .inTurn: wire = Wire(type: "in-turn")
        case .overheads(let nanoseconds): wire = Wire(type: "overheads", numbers: nanoseconds)
        case .round(let round): wire = Wire(type: "round", round: round)
        case .problem(let why): wire = Wire(type: "problem", text: why)
        case .unreachable(let why): wire = Wire(type: "unreachable", text: why)
        case .storageFailed(let why): wire = Wire(type: "storage-failed", text: why)
        case .plan(let plan): wire = Wire(type: "plan", plan: plan)
        case .grant(let id, let grant): wire = Wire(type: "grant", id: id, grant: StoredGrant(grant))
        case .failure(let id, let error):
            wire = Wire(type: "failure", id: id, number: Int64(Self.endpointErrors.firstIndex(of: error) ?? 0))
        }
        return ProcessLine.encode(wire)
    }

    /// The message a line holds, or `nil` for anything else (a stray line from a store's own
    /// `print`, which the driver ignores).
    init?(line: String) {
        guard let wire = ProcessLine.decode(line, as: Wire.self) else { return nil }
        func sessionError() -> SessionError? { Self.sessionErrors.first { $0.description == wire.text } }
        switch wire.type {
        case "sign-in":
            guard let id = wire.id, let text = wire.text else { return nil }
            self = .signInRequest(id: id, subject: text)
        case "refresh":
            guard let id = wire.id, let text = wire.text else { return nil }
            self = .refreshRequest(id: id, refreshToken: text)
        case "first":
            guard let generation = wire.generation else { return nil }
            self = .first(.success(generation))
        case "first-error":
            guard let error = sessionError() else { return nil }
            self = .first(.failure(error))
        case "got":
            guard let generation = wire.generation else { return nil }
            self = .got(.success(generation))
        case "got-error":
            guard let error = sessionError() else { return nil }
            self = .got(.failure(error))
        case "saved":
            guard let number = wire.number else { return nil }
            self = .saved(nanoseconds: number)
        case "reads":
            guard let count = wire.count, let calls = wire.number else { return nil }
            self = .reads(count: count, storageCalls: Int(calls))
        case "answered":
            guard let id = wire.id, let generation = wire.generation, let number = wire.number else { return nil }
            self = .answered(instance: id, .success(generation), nanoseconds: number)
        case "answered-error":
            guard let id = wire.id, let error = sessionError(), let number = wire.number else { return nil }
            self = .answered(instance: id, .failure(error), nanoseconds: number)
        case "round-done":
            guard let id = wire.id else { return nil }
            self = .roundDone(id)
        case "round":
            guard let round = wire.round else { return nil }
            self = .round(round)
        case "signed-out": self = .signedOut
        case "in-turn": self = .inTurn
        case "overheads":
            guard let numbers = wire.numbers else { return nil }
            self = .overheads(numbers)
        case "done": self = .done
        case "problem": self = .problem(wire.text ?? "")
        case "unreachable": self = .unreachable(wire.text ?? "")
        case "storage-failed": self = .storageFailed(wire.text ?? "")
        case "plan":
            guard let plan = wire.plan else { return nil }
            self = .plan(plan)
        case "grant":
            guard let id = wire.id, let grant = wire.grant else { return nil }
            self = .grant(id: id, grant.grant)
        case "failure":
            guard let id = wire.id, let index = wire.number, Self.endpointErrors.indices.contains(Int(index)) else {
                return nil
            }
            self = .failure(id: id, Self.endpointErrors[Int(index)])
        default: return nil
        }
    }
}
