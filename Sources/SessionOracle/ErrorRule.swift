import SessionContract

/// When the contract's judge allows a token request to end in an error: each rule stated once.
/// ``ContractJudge`` applies them (`judgeError`); the `SessionError` table of docs/contract.md
/// and I13's summary in docs/invariants.md are made from these texts, so the docs say what the
/// judge does.
package struct ErrorRule: Sendable {
    package let error: SessionError
    /// What the contract says the error means (``SessionError``'s own documentation).
    package let promise: String
    /// How the judge checks it, in one Markdown cell.
    package let check: String
    /// The scenarios that drive it.
    package let exercisedBy: String

    /// The error as Swift spells it: `signedOut`.
    package var name: String {
        switch error {
        case .signedOut: "signedOut"
        case .signInFailed: "signInFailed"
        case .refreshFailed: "refreshFailed"
        case .refreshTokenRevoked: "refreshTokenRevoked"
        case .cancelled: "cancelled"
        case .stepUpDenied: "stepUpDenied"
        case .stepUpDismissed: "stepUpDismissed"
        case .stepUpFailed: "stepUpFailed"
        }
    }

    /// When `signedOut` is an answer: the call's own session is over, by the user or the server.
    package static let signedOutWhen = """
        no session was current when the call started, a sign-in or sign-out of the account ran while it \
        waited, or the server had refused the call's session by the time it returned
        """
    /// When `refreshTokenRevoked` is an answer: the server refused the call's own session.
    package static let revokedWhen = """
        the server had refused the refresh token of the call's own session by the time it returned (an \
        earlier session's refusal does not count, nor any with nobody signed in; a refresh token the server \
        never knew counts for the account's session under way)
        """

    package static let all: [ErrorRule] = [
        ErrorRule(
            error: .signedOut,
            promise: "no session — never signed in, signed out, replaced by another sign-in while the call waited, or refused by the server",
            check: "**I13**: only when \(signedOutWhen); a waiter of the refused refresh may be told `signedOut` or `refreshTokenRevoked` (**I2**: all of them the same)",
            exercisedBy: "every call of a signed-in session; `flaky-server`'s revocations"),
        ErrorRule(
            error: .signInFailed, promise: "the server refused or could not complete a sign-in",
            check: "**I12**: only from `signIn`, and only when the server refused it", exercisedBy: "refused sign-ins"),
        ErrorRule(
            error: .refreshFailed, promise: "may pass; the next call may refresh again",
            check: """
                **I10**: needs a refresh of the call's own session that failed while it waited, or that the store \
                was still handing to its waiters when the call began, one of them not back yet (an old failure \
                replayed is sticky); waiters of a failed refresh do not each retry; **I12** with no failure behind \
                it, or with the server's refusal of the session behind it (the session is over: it may not pass)
                """,
            exercisedBy:
                "`flaky-server`: transient, timeout, outage, back to back, a lost answer; in `explore`, a 401 after a failure"),
        ErrorRule(
            error: .refreshTokenRevoked,
            promise: "the server no longer accepts this session's refresh token; the session is over until the next sign-in",
            check: """
                **I13**: only when \(revokedWhen); **I27** revocation final: once a caller was told, no call gets a \
                token of that session and no refresh of it is sent
                """,
            exercisedBy: """
                `flaky-server`: an administrator's revocation (then the other user signs in), a lost answer whose \
                retry is a reuse (then the same user signs in again); a 401 and the synchronous read after it
                """),
        ErrorRule(
            error: .cancelled, promise: "the calling task was cancelled while it waited",
            check: "**I11**: only for a caller that was cancelled", exercisedBy: "`cancellation-storm`, `step-up`"),
    ]
}
