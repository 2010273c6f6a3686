import Foundation
import SessionContract
import TokenServer

/// Judges each call's outcome against what the server's ledger and the harness's own
/// actions can explain.
///
/// A token must belong to the caller's account and to a session that had not been ended
/// when the call started (I8, I9). An error needs a cause that happened while the call was
/// under way:
/// - `refreshFailed`: a refresh of this account failed in a way that may pass (transient,
///   timeout, lost answer) and was answered while the call waited. None, but one failed
///   earlier: the store replays an old failure (I10, sticky). None at all: the store gave
///   up without asking the server (I12).
/// - `refreshTokenRevoked`: the server refused this account's refresh token (`invalid_grant`)
///   before the call returned; otherwise the store ended the session on its own (I13).
/// - `signedOut`: the call overlapped a sign-out or a sign-in, or the server had refused the
///   session; a call made wholly inside a signed-in session must not get it (I13).
/// - `cancelled`: only for a caller the harness cancelled (I11).
struct OutcomeJudge {
    struct Finding {
        let invariant: Invariant
        let summary: String
        let trace: [String]
    }

    let entries: [LedgerEntry]
    let accountOfFamily: [UInt64: Int]
    let familyOfGeneration: [UInt64: UInt64]
    let events: [SessionEvent]
    private let refreshesByAccount: [Int: [LedgerEntry]]

    init(
        entries: [LedgerEntry], accountOfFamily: [UInt64: Int], familyOfGeneration: [UInt64: UInt64],
        events: [SessionEvent]
    ) {
        self.entries = entries
        self.accountOfFamily = accountOfFamily
        self.familyOfGeneration = familyOfGeneration
        self.events = events
        var byAccount: [Int: [LedgerEntry]] = [:]
        for entry in entries where entry.call == .refresh {
            if let account = accountOfFamily[entry.family] { byAccount[account, default: []].append(entry) }
        }
        refreshesByAccount = byAccount
    }

    func refreshes(of account: Int) -> [LedgerEntry] { refreshesByAccount[account] ?? [] }

    func judge(_ call: ObservedCall) -> Finding? {
        let who = "\(call.phase): caller \(call.caller)"
        // A cancelled caller may get any error: its wait, or its own request, was cut short.
        if call.wasCancelled, call.error != nil { return nil }
        switch call.outcome {
        case .success(let issued):
            return judgeToken(issued, call: call, who: who)
        case .failure(.cancelled):
            guard !call.wasCancelled else { return nil }
            return Finding(
                invariant: .cancellationIsolated, summary: "\(who) was not cancelled but got 'cancelled'",
                trace: ["the harness cancelled other callers waiting on the same refresh, not this one"]
                    + attemptsTrace(refreshes(of: call.account), during: call))
        case .failure(.refreshFailed):
            let mine = refreshes(of: call.account)
            let during = mine.filter { $0.isPassingFailure && answered($0, within: call) }
            if let cancelled = during.first(where: { $0.outcome == .dropped || $0.lostByClient }),
                !during.contains(where: { $0.outcome != .dropped && !$0.lostByClient })
            {
                return Finding(
                    invariant: .cancellationIsolated,
                    summary: "\(who) got 'refresh failed': the refresh it waited on was cancelled with another caller",
                    trace: ["the server saw the refresh's connection dropped: " + Oracle.describe(cancelled)])
            }
            if !during.isEmpty { return nil }
            let earlier = mine.filter { $0.isPassingFailure && ($0.respondedAt ?? .max) < call.startedNanos }
            if let last = earlier.last {
                return Finding(
                    invariant: .failureSharedNotSticky,
                    summary:
                        "\(who) got 'refresh failed' though no refresh failed while it waited: an earlier failure was replayed",
                    trace: ["the last failed refresh, answered before the call started: " + Oracle.describe(last)]
                        + attemptsTrace(mine, during: call))
            }
            return Finding(
                invariant: .served,
                summary: "\(who) got 'refresh failed' from a server that failed nothing: the store gave up",
                trace: attemptsTrace(mine, during: call))
        case .failure(.refreshTokenRevoked):
            if invalidGrant(for: call.account, before: call.endedNanos) != nil { return nil }
            let mine = refreshes(of: call.account)
            return Finding(
                invariant: .sessionKept,
                summary:
                    "\(who) got 'refresh token revoked' though the server never refused this session's refresh token",
                trace: attemptsTrace(mine, during: call))
        case .failure(.signedOut):
            if !wasSignedIn(call.account, throughout: call) { return nil }
            if invalidGrant(for: call.account, before: call.endedNanos) != nil { return nil }
            return Finding(
                invariant: .sessionKept,
                summary:
                    "\(who) got 'signed out' while the session was signed in (no sign-out, no sign-in, no refusal from the server)",
                trace: attemptsTrace(refreshes(of: call.account), during: call))
        case .failure(let error):
            return Finding(
                invariant: .served, summary: "\(who) got '\(error)' from a token request",
                trace: attemptsTrace(refreshes(of: call.account), during: call))
        }
    }

    private func judgeToken(_ issued: ObservedCall.Issued, call: ObservedCall, who: String) -> Finding? {
        if issued.account != call.account {
            return Finding(
                invariant: .noCrossUserLeak, summary: "\(who) of account \(call.account) got another account's token",
                trace: [
                    "the caller asked account \(call.account)'s store; generation \(issued.generation) belongs to "
                        + (issued.account.map { "account \($0)" } ?? "no account of this run")
                ] + issuance(of: issued.generation))
        }
        guard let family = familyOfGeneration[issued.generation], let ended = ending(of: family, account: call.account),
            call.startedNanos > ended.returnedNanos
        else { return nil }
        let byOtherUser: Bool
        if case .signIn(let slot, _) = ended.kind, let session = signIn(of: family),
            case .signIn(let oldSlot, _) = session.kind
        {
            byOtherUser = slot != oldSlot
        } else {
            byOtherUser = false
        }
        let how = ended.isSignIn ? (byOtherUser ? "another user's sign-in" : "a new sign-in") : "the sign-out"
        return Finding(
            invariant: byOtherUser ? .noCrossUserLeak : .signOutFence,
            summary:
                "\(who) started after \(how) returned and got generation \(issued.generation) of the ended session",
            trace: [
                "family \(family) ended: \(how) returned at +\(relative(ended.returnedNanos))",
                "the call started at +\(relative(call.startedNanos)) and returned generation \(issued.generation) (family \(family))",
            ] + issuance(of: issued.generation))
    }

    // MARK: Facts

    private func answered(_ entry: LedgerEntry, within call: ObservedCall) -> Bool {
        guard let responded = entry.respondedAt else { return false }
        return responded >= call.startedNanos && responded <= call.endedNanos
    }

    /// The server's refusal of one of `account`'s refresh tokens, answered by `instant`.
    func invalidGrant(for account: Int, before instant: Int64) -> LedgerEntry? {
        // A token the server does not know cannot be traced to an account; it counts for all.
        refreshes(of: account).first { $0.isInvalidGrant && ($0.respondedAt ?? .max) <= instant }
            ?? entries.first {
                $0.call == .refresh && $0.outcome == .unknownToken && ($0.respondedAt ?? .max) <= instant
            }
    }

    /// Whether a session of `account` was established before `call` started and no
    /// sign-out or sign-in touched it before the call returned.
    private func wasSignedIn(_ account: Int, throughout call: ObservedCall) -> Bool {
        let mine = events.filter { $0.account == account }
        guard let last = mine.last(where: { $0.returnedNanos <= call.startedNanos }), last.isSignIn else {
            return false
        }
        return !mine.contains { $0.startedNanos > last.startedNanos && $0.startedNanos <= call.endedNanos }
    }

    /// The event that ended the session of `family`, if one did.
    private func ending(of family: UInt64, account: Int) -> SessionEvent? {
        guard let start = signIn(of: family) else { return nil }
        return events.first { $0.account == account && $0.startedNanos > start.startedNanos }
    }

    private func signIn(of family: UInt64) -> SessionEvent? {
        events.first { if case .signIn(_, family?) = $0.kind { true } else { false } }
    }

    private var origin: Int64 { entries.first?.sentAt ?? 0 }

    private func relative(_ nanos: Int64) -> String {
        String(format: "%.3fms", Double(nanos - origin) / 1e6)
    }

    private func issuance(of generation: UInt64) -> [String] {
        entries.first { $0.issuedGeneration == generation }.map { ["issued by " + Oracle.describe($0)] } ?? []
    }

    private func attemptsTrace(_ refreshes: [LedgerEntry], during call: ObservedCall) -> [String] {
        let window = refreshes.filter {
            ($0.respondedAt ?? .max) >= call.startedNanos - 1_000_000_000 && $0.sentAt <= call.endedNanos
        }
        let head = "the call ran from +\(relative(call.startedNanos)) to +\(relative(call.endedNanos))"
        if window.isEmpty { return [head, "no refresh of this account reached the server around it"] }
        return [head] + window.suffix(3).map { "around it: " + Oracle.describe($0) }
    }
}
