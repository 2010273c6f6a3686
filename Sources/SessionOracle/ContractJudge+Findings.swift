import SessionContract
import TokenServer

/// The judge's checks as values: what a driver hands the oracle once its history is recorded.
extension ContractJudge {
    /// What ``judge(_:timeline:report:)`` finds over `calls`, in order.
    /// `context`: calls that are facts but not judged (see ``judge(_:context:timeline:report:)``).
    package mutating func findings(
        _ calls: [ObservedCall], context: [ObservedCall] = [], timeline: SessionTimeline
    ) -> [Finding] {
        var findings: [Finding] = []
        judge(calls, context: context, timeline: timeline) { findings.append($0) }
        return findings
    }

    /// What ``judgeServerCalls(_:report:)`` finds over `timeline`, in order.
    package func serverCallFindings(_ timeline: SessionTimeline) -> [Finding] {
        var findings: [Finding] = []
        judgeServerCalls(timeline) { findings.append($0) }
        return findings
    }
}
