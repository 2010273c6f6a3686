import Foundation
import SessionContract
import TokenServer

/// What a `shared-storage` or `replicas` run recorded, for ``SharedStorageJudge``: what every
/// store instance's callers got at each event, the server's ledger then, and what the storage
/// held after it (read with the backend's own code), in the order the driver ran them.
package struct SharedStorageHistory: Sendable {
    /// What one caller of one store instance got: a generation, or an error.
    package struct Answer: Sendable {
        /// The instance, as traces name it (`process 1 instance 0`).
        package let instance: String
        package let result: Result<UInt64, SessionError>

        package init(instance: String, result: Result<UInt64, SessionError>) {
            self.instance = instance
            self.result = result
        }
    }

    /// One event as the driver ordered it.
    package struct Event: Sendable {
        package let index: Int
        package let expiry: Bool
        /// Instances that took part.
        package let holders: Int
        /// The newest generation the server had issued before the event: after an expiry, older
        /// tokens have expired.
        package let issuedBefore: UInt64
        /// For a storm: the generation each instance held, the one its callers' 401s were for.
        package let held: [String: UInt64]

        package init(index: Int, expiry: Bool, holders: Int, issuedBefore: UInt64, held: [String: UInt64]) {
            self.index = index
            self.expiry = expiry
            self.holders = holders
            self.issuedBefore = issuedBefore
            self.held = held
        }
    }

    /// `replicas`: the expiry during which one replica stalled in its turn, its refresh token read.
    package struct Stall: Sendable {
        package let index: Int
        package let issuedBefore: UInt64
        /// The others' callers while it held the lock; then the stalled replica's and everyone's after it.
        package let during: [Answer]
        package let rest: [Answer]
        /// The longest any caller waited while it held the lock, in seconds (none when it never held it).
        package let waited: Double?
        /// Whether the machine kept the waiters (or the driver) from the CPUs or the disk meanwhile.
        package let crowded: Bool

        package init(
            index: Int, issuedBefore: UInt64, during: [Answer], rest: [Answer], waited: Double?, crowded: Bool
        ) {
            self.index = index
            self.issuedBefore = issuedBefore
            self.during = during
            self.rest = rest
            self.waited = waited
            self.crowded = crowded
        }
    }

    /// One thing the driver saw, with the server's ledger as it stood then where the check reads it.
    package enum Observation: Sendable {
        /// The first call of each instance of `process`, made over the saved session.
        case firsts(process: Int, results: [Result<UInt64, SessionError>])
        /// An event (a 401 storm or an expiry) and what its callers got; whether the machine was
        /// crowded meanwhile (a lock with a timeout may then let its waiters go through no fault of
        /// the store: their `refreshFailed` is not judged).
        case event(Event, answers: [Answer], ledger: [LedgerEntry], crowded: Bool = false)
        /// What the storage held after `step`, and the newest generation any caller had by then.
        case storage(after: String, held: StoredState, newest: UInt64)
        /// `replicas`: the expiry after the lock holder was killed; how long it took from the kill,
        /// whether the killed replica held its turn, whether the machine crowded the survivors out.
        case recovery(
            Event, answers: [Answer], ledger: [LedgerEntry], seconds: Double, killedInTurn: Bool, crowded: Bool)
        case stall(Stall, ledger: [LedgerEntry])
        /// The others' 401s after one instance signed out, and what the storage held then (`nil`:
        /// it could not be read).
        case afterSignOut(answers: [Answer], ledger: [LedgerEntry], held: StoredState?)
        /// What was found on disk of the ended session's refresh token after the sign-out.
        case signedOutOnDisk(exposures: [String])
    }

    package let backend: String
    /// Store instances in all, and the processes they ran in.
    package let holders: Int
    package let processes: Int
    /// The generation the driver saved before the processes started.
    package let saved: UInt64
    /// The backend's lock timeout, in seconds, if it has one.
    package let lockTimeout: Double?
    package var observations: [Observation] = []

    package init(backend: String, holders: Int, processes: Int, saved: UInt64, lockTimeout: Double?) {
        self.backend = backend
        self.holders = holders
        self.processes = processes
        self.saved = saved
        self.lockTimeout = lockTimeout
    }
}

/// Judges a `shared-storage` or `replicas` run from what the instances' callers got, the server's
/// ledger and what the storage held: none of it looks inside a store.
package enum SharedStorageJudge {
    package typealias Finding = ContractJudge.Finding
    package typealias Answer = SharedStorageHistory.Answer

    /// What the run's figures take from the judgement: grants taken from the storage rather than
    /// refreshed (every holder but the refreshing one, in an event with one refresh and every
    /// caller served a fresh token).
    package struct Tally: Sendable, Equatable {
        package var grantsTaken = 0
        /// Events whose failed lock waits went unjudged on a crowded machine, and the grants they
        /// would have counted.
        package var crowdedEvents = 0
        package var grantsNotCounted = 0
    }

    package static func judge(_ history: SharedStorageHistory) -> (findings: [Finding], tally: Tally) {
        var findings: [Finding] = []
        var tally = Tally()
        for observation in history.observations {
            switch observation {
            case .firsts(let process, let results):
                for case .failure(let error) in results {
                    findings.append(
                        Finding(
                            invariant: .durableRotation,
                            summary:
                                "a store instance in process \(process) was made over the saved session (generation "
                                + "\(history.saved)) but its first call got \(error)"))
                }
            case .event(let event, let answers, let ledger, let crowded):
                findings += judge(event, answers: answers, ledger: ledger, history, crowded: crowded, tally: &tally)
            case .storage(let step, let held, let newest):
                findings += storage(after: step, held: held, newest: newest).map { [$0] } ?? []
            case .recovery(let event, let answers, let ledger, let seconds, let killedInTurn, let crowded):
                findings += judge(event, answers: answers, ledger: ledger, history, tally: &tally)
                // Past the lock's timeout on a machine that kept the survivors (or the driver) from
                // the CPUs or the disk meanwhile, the wait says nothing about the lock: not judged.
                if killedInTurn, let timeout = history.lockTimeout, seconds > timeout, !crowded {
                    findings.append(
                        Finding(
                            invariant: .served,
                            summary:
                                "a replica killed while it held the lock kept the others waiting \(Oracle.text(seconds)) s, "
                                + "past the \(history.backend) lock's timeout of \(Oracle.text(timeout)) s "
                                + "(event \(event.index), \(event.holders) surviving replicas)"))
                }
            case .stall(let stall, let ledger):
                findings += judge(stall, ledger: ledger, history)
            case .afterSignOut(let answers, let ledger, let held):
                findings += afterSignOut(answers, ledger: ledger, held: held, history)
            case .signedOutOnDisk(let exposures):
                findings.append(
                    Finding(
                        invariant: .signOutDurable,
                        summary: "after the sign-out, the ended session's refresh token was still on disk",
                        trace: exposures))
            }
        }
        return (findings, tally)
    }

    /// The refresh calls the server got under `event \(index)`.
    package static func refreshes(event index: Int, in ledger: [LedgerEntry]) -> [LedgerEntry] {
        ledger.filter { $0.context == "event \(index)" && $0.call == .refresh }
    }

    /// I1, I4, I6, I12, I13 for one event: exactly one refresh call across every holder, and every
    /// caller handed a token newer than the one its 401 was for, or issued after the expiry.
    ///
    /// On a `crowded` machine, over a backend whose lock has a timeout, callers that got
    /// `refreshFailed` in an event otherwise right (one refresh, a caller served by it, nothing
    /// stale or refused) gave up waiting on a holder the machine slowed: the backend's documented
    /// transient failure, not judged; the event is counted as crowded.
    static func judge(
        _ event: SharedStorageHistory.Event, answers: [Answer], ledger: [LedgerEntry], _ history: SharedStorageHistory,
        crowded: Bool = false, tally: inout Tally
    ) -> [Finding] {
        var findings: [Finding] = []
        let name = event.expiry ? "expiry" : "401 storm"
        let context =
            "event \(event.index), \(event.expiry ? "an" : "a") \(name) for \(event.holders) of the "
            + "\(history.holders) store instances sharing one \(history.backend) storage across \(history.processes) processes"
        let refreshes = refreshes(event: event.index, in: ledger)
        if let finding = singleFlight(refreshes, name: name, context: context) { findings.append(finding) }
        // Once the server has refused a refresh token the session is over for every holder: the
        // reuse behind it is I7's, and callers told so are right.
        let refused = ledger.contains { $0.call == .refresh && $0.isInvalidGrant }
        let stale = answers.compactMap { answer -> (String, UInt64, UInt64)? in
            guard let generation = try? answer.result.get() else { return nil }
            let floor = event.expiry ? event.issuedBefore : event.held[answer.instance] ?? 0
            return generation <= floor ? (answer.instance, generation, floor) : nil
        }
        if let (instance, generation, floor) = stale.first {
            findings.append(
                Finding(
                    invariant: event.expiry ? .fresh : .staleRejectionDoesNotRefresh,
                    summary: event.expiry
                        ? "\(stale.count) caller(s) got generation \(generation), issued before the expiry (every token up "
                            + "to generation \(floor) had expired) (\(context))"
                        : "\(stale.count) caller(s) got generation \(generation) in answer to a 401 for generation "
                            + "\(floor) (\(context))",
                    trace: ["first seen at \(instance)"]))
        }
        let failures = answers.compactMap { answer -> (String, SessionError)? in
            guard case .failure(let error) = answer.result else { return nil }
            return (answer.instance, error)
        }
        // Only an event otherwise right: one refresh made, a caller served by it, nothing stale,
        // nothing refused, and every failure a lock wait given up.
        let excused =
            crowded && history.lockTimeout != nil && !failures.isEmpty && !refused && refreshes.count == 1
            && stale.isEmpty && failures.count < answers.count && failures.allSatisfy { $0.1 == .refreshFailed }
        if excused {
            tally.crowdedEvents += 1
            tally.grantsNotCounted += event.holders - 1
        }
        if let (instance, error) = failures.first, !refused, !excused {
            let ends = error == .refreshTokenRevoked || error == .signedOut
            findings.append(
                Finding(
                    invariant: ends ? .sessionKept : .served,
                    summary:
                        "\(failures.count) caller(s) got \(error) though the server refused nothing and no one signed out "
                        + "(\(context))",
                    trace: ["first seen at \(instance)"]))
        }
        if refreshes.count == 1, stale.isEmpty, failures.isEmpty { tally.grantsTaken += event.holders - 1 }
        return findings
    }

    /// I1 for one event: more than one refresh call made under it.
    static func singleFlight(_ refreshes: [LedgerEntry], name: String, context: String) -> Finding? {
        guard refreshes.count > 1 else { return nil }
        return Finding(
            invariant: .singleFlight, summary: "\(refreshes.count) refresh calls for one \(name) (\(context))",
            trace: refreshes.prefix(3).map(Oracle.describe))
    }

    /// I15 between events: the storage holds the newest generation any caller has been handed, so
    /// the next holder to refresh presents the refresh token the server expects.
    static func storage(after step: String, held: StoredState, newest: UInt64) -> Finding? {
        switch held {
        case .session(let generation) where generation < newest:
            Finding(
                invariant: .durableRotation,
                summary:
                    "after \(step) the storage held generation \(generation), but callers had generation \(newest): the "
                    + "next holder to refresh presents a used refresh token")
        case .empty:
            Finding(
                invariant: .durableRotation,
                summary: "after \(step) the storage held no session, but callers had generation \(newest)")
        case .unreadable:
            Finding(invariant: .restorable, summary: "after \(step) the stored session could not be read back")
        case .session:
            nil
        }
    }

    /// `replicas`' stall: while one replica held the lock, the others' callers may only wait or
    /// fail (`refreshFailed`, a store that gave up on the lock); no one may reach the server. Then
    /// the stalled replica's refresh is the one refresh of the expiry (I1), and every caller
    /// afterwards gets a token issued after the expiry (I4) with no other error (I12, I13). The
    /// others may wait for the lock up to its timeout, with half as much again for the clocks and
    /// the round trips; longer, the backend's timeout does not bound the wait (I12).
    static func judge(_ stall: SharedStorageHistory.Stall, ledger: [LedgerEntry], _ history: SharedStorageHistory)
        -> [Finding]
    {
        var findings: [Finding] = []
        let context = "event \(stall.index), an expiry while one replica stalled holding the \(history.backend) lock"
        // Longer on a machine that kept the waiters (or the driver) from the CPUs or the disk says
        // nothing about the lock: not judged.
        if let waited = stall.waited, let timeout = history.lockTimeout, waited > timeout * 1.5, !stall.crowded {
            findings.append(
                Finding(
                    invariant: .served,
                    summary:
                        "while one replica stalled holding the lock, a caller of another replica waited \(Oracle.text(waited)) s, "
                        + "past the lock's timeout of \(Oracle.text(timeout)) s (\(context))"))
        }
        if let finding = singleFlight(refreshes(event: stall.index, in: ledger), name: "expiry", context: context) {
            findings.append(finding)
        }
        let refused = ledger.contains { $0.call == .refresh && $0.isInvalidGrant }
        func judge(_ answers: [Answer], waiting: Bool) {
            for answer in answers {
                switch answer.result {
                case .success(let generation) where generation <= stall.issuedBefore:
                    findings.append(
                        Finding(
                            invariant: .fresh,
                            summary: "a caller got generation \(generation), issued before the expiry (\(context))",
                            trace: ["first seen at \(answer.instance)"]))
                case .success:
                    continue
                case .failure(.refreshFailed) where waiting:
                    continue
                case .failure(let error) where !refused:
                    let ends = error == .refreshTokenRevoked || error == .signedOut
                    findings.append(
                        Finding(
                            invariant: ends ? .sessionKept : .served,
                            summary: "a caller got \(error) though the server refused nothing and no one signed out ("
                                + (waiting ? "while the lock was held, " : "") + "\(context))",
                            trace: ["first seen at \(answer.instance)"]))
                case .failure:
                    continue
                }
            }
        }
        judge(stall.during, waiting: true)
        judge(stall.rest, waiting: false)
        return findings
    }

    /// I8, I13, I16 after one instance's sign-out: the others' 401s get `signedOut`, nothing is
    /// presented to the server, and the storage is empty.
    static func afterSignOut(
        _ answers: [Answer], ledger: [LedgerEntry], held: StoredState?, _ history: SharedStorageHistory
    ) -> [Finding] {
        var findings: [Finding] = []
        let context = "after store instance 0 of process 0 signed out, over one \(history.backend) storage"
        let served = answers.filter { (try? $0.result.get()) != nil }
        let refreshes = ledger.filter { $0.context == "after sign-out" && $0.call == .refresh }
        if let first = served.first, let generation = try? first.result.get() {
            findings.append(
                Finding(
                    invariant: .signOutFence,
                    summary:
                        "\(served.count) 401(s) sent after signOut() had returned in another holder got a token of the ended "
                        + "session (generation \(generation)) (\(context))",
                    trace: ["first seen at \(first.instance)"] + refreshes.prefix(2).map(Oracle.describe)))
        } else if let refresh = refreshes.first {
            findings.append(
                Finding(
                    invariant: .signOutFence,
                    summary:
                        "the ended session's refresh token was presented after signOut() had returned (\(context))",
                    trace: [Oracle.describe(refresh)]))
        }
        let refused = ledger.contains { $0.call == .refresh && $0.isInvalidGrant }
        if !refused,
            let other = answers.first(where: { $0.result != .failure(.signedOut) && (try? $0.result.get()) == nil }),
            case .failure(let error) = other.result
        {
            findings.append(
                Finding(
                    invariant: .sessionKept,
                    summary: "a 401 sent after the sign-out got \(error) rather than signedOut (\(context))",
                    trace: ["first seen at \(other.instance)"]))
        }
        if case .session(let generation) = held {
            findings.append(
                Finding(
                    invariant: .signOutDurable,
                    summary:
                        "after the sign-out and the others' 401s the storage held a session (generation \(generation)) "
                        + "(\(context))"))
        }
        return findings
    }
}
