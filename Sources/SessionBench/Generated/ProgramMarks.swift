import SessionOracle
import TokenServer

/// Something a caller did that is not a call of the store's: the token expiring, a sign-in or a
/// sign-out starting or returning, with when (real nanoseconds), for the interleaving.
struct ProgramMark: Sendable {
    let nanos: Int64
    let caller: Int
    let phase: String
    let text: String

    /// The text of a cancellation's mark.
    static let cancel = "cancel →"
    /// The caller number of the user's marks (a step-up prompt shown, answered): the column
    /// `user`, after every caller's.
    static let user = Int.max
    /// The text of a step-up's clinical request's mark, when it began.
    static let elevatedToken = "elevatedToken()"
}

/// Where a cancellation landed in the call it cancelled: before it, during it with no refresh
/// around, while it waited on a refresh not yet sent, one at the server, one answered whose
/// answer had not reached the caller yet, or after the call returned.
public enum CancelPoint: String, CaseIterable, Sendable, Codable {
    case beforeTheCall = "before the call"
    case noRefresh = "in a call with no refresh"
    case refreshNotSent = "refresh not sent yet"
    case atTheServer = "refresh at the server"
    case answerOnItsWay = "answered, caller not back"
    case afterTheCall = "after the call returned"

    /// Each cancelled call of `calls` with the mark of the cancellation that hit it (a caller's
    /// k-th cancellation mark is its k-th cancelled call: its steps run one after another),
    /// placed against the refreshes of `entries`.
    static func points(_ calls: [ObservedCall], marks: [ProgramMark], entries: [LedgerEntry]) -> [CancelPoint] {
        let refreshes = entries.filter { $0.call == .refresh }
        var cancels = Dictionary(grouping: marks.filter { $0.text == ProgramMark.cancel }, by: \.caller)
        return calls.filter(\.wasCancelled).sorted { $0.startedNanos < $1.startedNanos }.compactMap { call in
            guard let at = cancels[call.caller]?.first?.nanos else { return nil }
            cancels[call.caller]?.removeFirst()
            if at < call.startedNanos { return .beforeTheCall }
            if at > call.endedNanos { return .afterTheCall }
            guard
                let refresh = refreshes.last(where: {
                    $0.sentAt <= call.endedNanos && ($0.respondedAt ?? .max) >= call.startedNanos
                })
            else { return .noRefresh }
            if at < refresh.sentAt { return .refreshNotSent }
            if at < refresh.respondedAt ?? .max { return .atTheServer }
            return .answerOnItsWay
        }
    }
}
