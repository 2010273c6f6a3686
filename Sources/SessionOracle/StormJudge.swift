import Foundation
import SessionContract
import TokenServer

/// What one round of a storm scenario recorded, for ``StormJudge``: every call of the round and
/// what each account's storage held when the round ended. What its storms were seen to do
/// (``Observation``) is judged as each storm is recorded: a run whose cooperative pool starves
/// ends its process mid-round, and reports what was judged by then.
package struct StormRound: Sendable {
    /// One thing the driver saw of a storm.
    package enum Observation: Sendable {
        /// One account's refresh calls for one storm (`what`: "expiry", "401 storm"), with when
        /// the held refresh was released. `staleAfterSuccess`: the storm's 401s were for the token
        /// the first refresh replaced (or an older one), so a refresh sent after it succeeded is
        /// a 401 refreshing for a replaced token.
        case refreshes(attempts: [LedgerEntry], what: String, released: Int64?, staleAfterSuccess: Bool)
        /// The calls of one account that met its storm, and the storm's refresh calls.
        case waiters([ObservedCall], attempts: [LedgerEntry])
        /// One account's refresh calls for one storm against a failing server.
        case failedRefreshes([LedgerEntry])
        /// 401s reported for a token older than the current one.
        case staleRejections(StaleRejections)
        /// The waiters of a refresh that a sign-out or a user switch discarded.
        case discardedWaiters(DiscardedWaiters)
    }

    /// Callers that reported a 401 for a token older than the current one, once the current one
    /// was known: none may reach the server, and each gets the current token.
    package struct StaleRejections: Sendable {
        package var calls: [ObservedCall]
        /// The generation each account's callers reported, and the account's current one.
        package var stale: [UInt64]
        package var current: [UInt64?]
        /// How many refresh calls the server got while the calls ran, and the last few of them.
        package var refreshCalls: Int
        package var refreshes: [LedgerEntry]

        package init(
            calls: [ObservedCall], stale: [UInt64], current: [UInt64?], refreshCalls: Int, refreshes: [LedgerEntry]
        ) {
            self.calls = calls
            self.stale = stale
            self.current = current
            self.refreshCalls = refreshCalls
            self.refreshes = refreshes
        }
    }

    /// The callers still waiting on a held refresh when a fence (`fence`: "sign-out", "user
    /// switch") began, the families it ended, and, by account, the user signed in after it.
    package struct DiscardedWaiters: Sendable {
        package var waiters: [ObservedCall]
        package var ended: Set<UInt64>
        package var fence: String
        package var switchesUser: Bool
        package var leavesSignedIn: Bool
        package var signedInSlot: [Int]

        package init(
            waiters: [ObservedCall], ended: Set<UInt64>, fence: String, switchesUser: Bool, leavesSignedIn: Bool,
            signedInSlot: [Int]
        ) {
            self.waiters = waiters
            self.ended = ended
            self.fence = fence
            self.switchesUser = switchesUser
            self.leavesSignedIn = leavesSignedIn
            self.signedInSlot = signedInSlot
        }
    }

    /// What one account's storage held at the round's end: the generation saved, every write,
    /// and when it was read (real nanoseconds).
    package struct Storage: Sendable {
        package var account: Int
        package var saved: UInt64?
        package var writes: [StorageWrite]
        package var at: Int64

        package init(account: Int, saved: UInt64?, writes: [StorageWrite], at: Int64) {
            self.account = account
            self.saved = saved
            self.writes = writes
            self.at = at
        }
    }

    package var number: Int
    package var calls: [ObservedCall] = []
    package var storage: [Storage] = []

    package init(number: Int) { self.number = number }
}

/// Judges what a storm round recorded: its storms' refresh calls and waiters (I1, I2, I6, I8–I10),
/// then every call against the contract (``ContractJudge``), then what each storage held. Any
/// driver that makes a storm judges it here; `explore` judges its expiries with ``oneRefresh``.
package enum StormJudge {
    package typealias Finding = ContractJudge.Finding

    /// The findings of `round`, in order: its calls', then its storages'. `contract` keeps what
    /// earlier rounds taught it.
    package static func judge(_ round: StormRound, timeline: SessionTimeline, contract: inout ContractJudge)
        -> [Finding]
    {
        var findings: [Finding] = []
        contract.judge(round.calls, timeline: timeline) { findings.append($0) }
        for storage in round.storage {
            contract.judgeStorage(
                saved: storage.saved, writes: storage.writes, account: storage.account, calls: round.calls,
                timeline: timeline, at: storage.at
            ) { findings.append($0) }
        }
        return findings
    }

    /// The findings of one storm's `observation` in round `round`; `timeline` (the run so far) is
    /// read only for a fence's discarded waiters.
    package static func judge(
        _ observation: StormRound.Observation, round: Int, timeline: @autoclosure () -> SessionTimeline
    ) -> [Finding] {
        switch observation {
        case .refreshes(let attempts, let what, let released, let staleAfterSuccess):
            oneRefresh(attempts, round: round, what: what, released: released, staleAfterSuccess: staleAfterSuccess)
                .map { [$0] } ?? []
        case .waiters(let calls, let attempts):
            sameOutcome(calls, attempts: attempts, round: round).map { [$0] } ?? []
        case .failedRefreshes(let attempts):
            noRetryStorm(attempts, round: round)
        case .staleRejections(let stale):
            staleRejections(stale, round: round)
        case .discardedWaiters(let discarded):
            discardedWaiters(discarded, round: round, timeline: timeline()).map { [$0] } ?? []
        }
    }

    /// I1: against a healthy server, one expiry costs one refresh call per account.
    ///
    /// `staleAfterSuccess`: the storm's 401s were all for the token the first refresh replaced,
    /// so a refresh sent after it succeeded is a stale 401 refreshing (I6). (A caller that
    /// refreshes again after waiting is shown as I1 by the expiry storm, which has no 401s.)
    package static func oneRefresh(
        _ attempts: [LedgerEntry], round: Int, what: String, released: Int64?, staleAfterSuccess: Bool = false
    ) -> Finding? {
        guard attempts.count > 1, attempts.allSatisfy({ !$0.isPassingFailure || $0.outcome == .dropped }) else {
            return nil
        }
        // A session the server refused at the storm's first refresh (revoked before it) was not
        // served by a healthy server: calls that overlapped the refusal are the ledger audit's
        // (two refreshes in flight, I1), and any sent after it the judge's (I27).
        guard !attempts[0].isInvalidGrant else { return nil }
        let first = attempts[0]
        if staleAfterSuccess, first.deliveredGrant, let answered = first.respondedAt,
            attempts.dropFirst().allSatisfy({ $0.sentAt >= answered })
        {
            return Finding(
                invariant: .staleRejectionDoesNotRefresh,
                summary:
                    "\(attempts.count - 1) more refresh call(s) after the 401 storm's refresh had succeeded: 401s for the replaced token refreshed again (round \(round))",
                trace: attempts.prefix(4).map(Oracle.describe))
        }
        let trace = attempts.prefix(4).map { entry -> String in
            var line = Oracle.describe(entry)
            if entry.index != first.index, let answered = first.respondedAt {
                let gap = Double(entry.sentAt - answered) / 1e6
                line +=
                    gap >= 0
                    ? String(format: ", sent %.3fms after the first refresh was answered", gap)
                    : String(
                        format: ", sent while the first refresh was in flight (%.3fms before it was answered)", -gap)
            } else if let released {
                line += String(
                    format: ", sent %.3fms before the held refresh was released", Double(released - entry.sentAt) / 1e6)
            }
            return line
        }
        return Finding(
            invariant: .singleFlight,
            summary: "\(attempts.count) refresh calls for one \(what) against a healthy server (round \(round))",
            trace: trace)
    }

    /// I2: with one refresh call, every waiter depended on it, so all must agree.
    package static func sameOutcome(_ calls: [ObservedCall], attempts: [LedgerEntry], round: Int) -> Finding? {
        guard attempts.count == 1, let answered = attempts[0].respondedAt else { return nil }
        var tally: [ObservedCall.Shared: [ObservedCall]] = [:]
        // The waiters: callers still in the store when the refresh was answered.
        for call in calls
        where !call.wasCancelled && !call.isSyncRead && call.startedNanos <= answered && call.endedNanos >= answered {
            tally[ObservedCall.Shared(call.answer), default: []].append(call)
        }
        guard tally.count > 1 else { return nil }
        return Finding(
            invariant: .sameOutcome, summary: "waiters of one refresh got different outcomes (round \(round))",
            trace: [Oracle.describe(attempts[0])]
                + tally.sorted { $0.value.count > $1.value.count }.map {
                    "\($0.value.count) caller(s) got \($0.key), e.g. \($0.value[0].phase) caller \($0.value[0].caller)"
                })
    }

    /// I10: waiters of a failed refresh fail together; they do not each retry. A caller that
    /// reached the store only after the failure may start one more attempt.
    package static func noRetryStorm(_ attempts: [LedgerEntry], round: Int) -> [Finding] {
        var findings: [Finding] = []
        let success = attempts.firstIndex(where: \.deliveredGrant)
        let beforeSuccess = attempts.prefix(upTo: success ?? attempts.count)
        if beforeSuccess.count > 2 {
            findings.append(
                Finding(
                    invariant: .failureSharedNotSticky,
                    summary:
                        "\(beforeSuccess.count) refresh attempts while one storm of callers waited (round \(round)): a retry storm",
                    trace: beforeSuccess.prefix(4).map(Oracle.describe)))
        }
        if let success, success < attempts.count - 1 {
            findings.append(
                Finding(
                    invariant: .singleFlight,
                    summary: "the store refreshed again after a refresh had succeeded, in one expiry (round \(round))",
                    trace: attempts[success...].prefix(4).map(Oracle.describe)))
        }
        return findings
    }

    /// I6: a 401 for a token older than the current one reaches no server, and is answered with
    /// the current token.
    package static func staleRejections(_ stale: StormRound.StaleRejections, round: Int) -> [Finding] {
        var findings: [Finding] = []
        if stale.refreshCalls > 0 {
            findings.append(
                Finding(
                    invariant: .staleRejectionDoesNotRefresh,
                    summary:
                        "\(stale.refreshCalls) refresh call(s) for 401s on a token older than the current one (round \(round))",
                    trace: [
                        "round \(round): \(stale.calls.count) callers reported 401 for generation(s) \(Set(stale.stale).sorted())"
                    ] + stale.refreshes.prefix(3).map(Oracle.describe)))
        }
        for call in stale.calls {
            guard let issued = call.token, stale.current.indices.contains(call.account),
                let current = stale.current[call.account], issued.generation != current
            else { continue }
            findings.append(
                Finding(
                    invariant: .staleRejectionDoesNotRefresh,
                    summary:
                        "a stale 401 returned generation \(issued.generation), not the current \(current) (round \(round))",
                    trace: [
                        "\(call.who) reported a 401 for generation \(stale.stale[call.account])",
                        "the store's current token was generation \(current); the call returned \(issued.generation)",
                    ]))
        }
        return findings
    }

    /// I8/I9: the waiters of a refresh that a sign-out or a user switch discarded get
    /// `signedOut`, never a token of the ended session. A token of the session a switch began
    /// is the contract's to judge (a call belongs to the session current when it started), and
    /// so is any error, whose cause it asks. The first such waiter is reported.
    static func discardedWaiters(_ discarded: StormRound.DiscardedWaiters, round: Int, timeline: SessionTimeline)
        -> Finding?
    {
        let fence = discarded.fence
        for call in discarded.waiters where !call.wasCancelled {
            // An error is judged like any call's: 'signed out' overlapped the fence; others need a cause.
            guard let issued = call.token else { continue }
            if let family = timeline.issued[issued.generation]?.family, discarded.ended.contains(family) {
                return Finding(
                    invariant: discarded.switchesUser ? .noCrossUserLeak : .signOutFence,
                    summary:
                        "a waiter of the refresh discarded by the \(fence) got generation \(issued.generation) of the ended session (round \(round))",
                    trace: [
                        "round \(round): the refresh was held at the server while callers waited",
                        "the \(fence) returned; then the held refresh was released and landed",
                        "\(call.who) got generation \(issued.generation) (family \(family), ended)",
                    ]
                        + (timeline.entries.first { $0.issuedGeneration == issued.generation }.map {
                            ["issued by " + Oracle.describe($0)]
                        } ?? []))
            }
            let slot =
                discarded.signedInSlot.indices.contains(call.account) ? discarded.signedInSlot[call.account] : nil
            if !discarded.leavesSignedIn || issued.subjectSlot != slot {
                return Finding(
                    invariant: .signOutFence,
                    summary:
                        "a waiter of the refresh discarded by the \(fence) got generation \(issued.generation), not 'signed out' (round \(round))",
                    trace: [
                        "round \(round): the refresh was held at the server while callers waited; the \(fence) returned before it landed",
                        "\(call.who) got generation \(issued.generation)",
                    ])
            }
        }
        return nil
    }
}

extension Oracle {
    /// Records ``StormJudge/oneRefresh(_:round:what:released:staleAfterSuccess:)``'s finding, if any.
    package func checkOneRefresh(
        _ attempts: [LedgerEntry], round: Int, what: String, released: Int64?, staleAfterSuccess: Bool = false
    ) {
        if let finding = StormJudge.oneRefresh(
            attempts, round: round, what: what, released: released, staleAfterSuccess: staleAfterSuccess)
        {
            report(finding)
        }
    }
}
