import Foundation
import SessionOracle
import TokenServer

extension Exploration.Run {
    /// The schedule as a short table, a column per caller and one for the server, a row per
    /// step that matters, in the order they happened (one thread ran them all, so the real clock
    /// of the calls and of the server's ledger orders them): a call asked, a call answered, a
    /// request reaching the server with what it did, an answer leaving it. Generations stand for
    /// tokens. With more than `rows` rows, only the phases the violations name (`round 1`) are
    /// kept; with more than `columns` callers, a row names its caller instead.
    public func interleaving(rows: Int = 40, columns: Int = 6) -> [String] {
        var events = self.events()
        guard !events.isEmpty else { return [] }
        if events.count > rows {
            let named = Set(events.map(\.phase)).filter { phase in
                violations.contains { violation in
                    ([violation.summary] + violation.trace).contains { $0.contains(phase) }
                }
            }
            if !named.isEmpty { events = events.filter { named.contains($0.phase) } }
            if events.count > rows { events = Array(events.prefix(rows)) }
        }
        let callers = Set(events.compactMap(\.caller)).sorted()
        let serverColumn = "server"
        var lines: [String] = []
        var phase: String?
        if callers.count <= columns {
            let width = 18
            func cells(_ values: [String]) -> String {
                values.map { $0.count >= width ? $0 + " " : $0.padding(toLength: width, withPad: " ", startingAt: 0) }
                    .joined().trimmingSuffix()
            }
            lines.append(cells(callers.map(Self.column) + [serverColumn]))
            for event in events {
                if event.phase != phase {
                    phase = event.phase
                    lines.append("· \(event.phase)")
                }
                let column = event.caller.flatMap { callers.firstIndex(of: $0) } ?? callers.count
                lines.append(cells(Array(repeating: "", count: column) + [event.text]))
            }
        } else {
            for event in events {
                if event.phase != phase {
                    phase = event.phase
                    lines.append("· \(event.phase)")
                }
                lines.append("\(event.caller.map(Self.column) ?? serverColumn): \(event.text)")
            }
        }
        return lines
    }

    /// A column's heading: `caller 3`, or `user` for the prompts a step-up showed.
    private static func column(_ caller: Int) -> String { caller == ProgramMark.user ? "user" : "caller \(caller)" }

    private struct Event {
        let nanos: Int64
        /// Orders events of one instant: a request before its answer.
        let order: Int
        let caller: Int?
        let phase: String
        let text: String
    }

    private func events() -> [Event] {
        var events: [Event] = []
        // A clinical request's failure that is its base token's is judged as a read too; its rows
        // are the request's (the read ends when the request does).
        let requests = Set(trace.marks.filter { $0.text.hasPrefix("← ") }.map { "\($0.caller) \($0.nanos)" })
        for (order, call) in trace.calls.enumerated() where !requests.contains("\(call.caller) \(call.endedNanos)") {
            let asked =
                switch call.request {
                case .validToken: "validToken()"
                case .tokenRejected(let generation): "tokenRejected(g\(generation))"
                case .currentToken: "currentToken()"
                }
            let got =
                switch call.answer {
                case .token(let issued): "← g\(issued.generation)"
                case .error(let error): "← \(error)"
                case .none: "← nil"
                }
            events.append(
                Event(nanos: call.startedNanos, order: 2 * order, caller: call.caller, phase: call.phase, text: asked))
            events.append(
                Event(nanos: call.endedNanos, order: 2 * order + 1, caller: call.caller, phase: call.phase, text: got))
        }
        for mark in trace.marks {
            events.append(Event(nanos: mark.nanos, order: 0, caller: mark.caller, phase: mark.phase, text: mark.text))
        }
        for entry in trace.entries {
            let presented = entry.presentedGeneration.map { " g\($0)" } ?? ""
            let issued = entry.issuedGeneration.map { " → g\($0)" } ?? ""
            let what = entry.outcome == .issued ? "" : " \(entry.outcome.rawValue)"
            events.append(
                Event(
                    nanos: entry.sentAt, order: -2, caller: nil, phase: entry.context,
                    text: "\(entry.call.rawValue)\(presented)\(issued)\(what)"))
            if let responded = entry.respondedAt {
                events.append(
                    Event(
                        nanos: responded, order: -1, caller: nil, phase: entry.context,
                        text: "answers" + (entry.issuedGeneration.map { " g\($0)" } ?? what)))
            }
        }
        return events.sorted { ($0.nanos, $0.order) < ($1.nanos, $1.order) }
    }
}

extension String {
    fileprivate func trimmingSuffix() -> String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}
