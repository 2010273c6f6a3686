import SessionContract
import SessionOracle
import SessionStorage
import TokenServer

/// The checks of `shared-storage`, from what the instances' callers got, the server's ledger and
/// what the storage holds, read with the backend's own code. None looks inside a store.
extension SharedStorageDriver {
    /// One event as the driver ordered it.
    struct Event {
        let index: Int
        let expiry: Bool
        /// Instances that took part.
        let holders: Int
        /// The newest generation the server had issued before the event: after an expiry, older
        /// tokens have expired.
        let issuedBefore: UInt64
        /// For a storm: the generation each instance held, the one its callers' 401s were for.
        let held: [String: UInt64]
    }

    /// I1, I4, I6, I12, I13 for one event: exactly one refresh call across every holder, and every
    /// caller handed a token newer than the one its 401 was for, or issued after the expiry.
    func judge(_ event: Event, heard: [Heard], ledger: [LedgerEntry], outcome: inout DriverOutcome) {
        let name = event.expiry ? "expiry" : "401 storm"
        let context =
            "event \(event.index), \(event.expiry ? "an" : "a") \(name) for \(event.holders) of the "
            + "\(holders) store instances sharing one \(backend.name) storage across \(processes) processes"
        let refreshes = judgeSingleFlight(event: event.index, name: name, context: context, ledger: ledger)
        // Once the server has refused a refresh token the session is over for every holder: the
        // reuse behind it is I7's, and callers told so are right.
        let refused = ledger.contains { $0.call == .refresh && $0.isInvalidGrant }
        let answers = heard.flatMap(\.answers)
        let stale = answers.compactMap { answer -> (String, UInt64, UInt64)? in
            guard let generation = try? answer.result.get() else { return nil }
            let floor = event.expiry ? event.issuedBefore : event.held[answer.instance] ?? 0
            return generation <= floor ? (answer.instance, generation, floor) : nil
        }
        if let (instance, generation, floor) = stale.first {
            oracle.report(
                event.expiry ? .fresh : .staleRejectionDoesNotRefresh,
                event.expiry
                    ? "\(stale.count) caller(s) got generation \(generation), issued before the expiry (every token up "
                        + "to generation \(floor) had expired) (\(context))"
                    : "\(stale.count) caller(s) got generation \(generation) in answer to a 401 for generation "
                        + "\(floor) (\(context))",
                trace: ["first seen at \(instance)"])
        }
        let failures = answers.compactMap { answer -> (String, SessionError)? in
            guard case .failure(let error) = answer.result else { return nil }
            return (answer.instance, error)
        }
        if let (instance, error) = failures.first, !refused {
            let ends = error == .refreshTokenRevoked || error == .signedOut
            oracle.report(
                ends ? .sessionKept : .served,
                "\(failures.count) caller(s) got \(error) though the server refused nothing and no one signed out "
                    + "(\(context))",
                trace: ["first seen at \(instance)"])
        }
        tally(refreshes: refreshes.count, answers: answers.count, failures: failures.count, outcome: &outcome)
        if refreshes.count == 1, stale.isEmpty, failures.isEmpty {
            outcome.persistence?.grantsTaken += event.holders - 1
        }
    }

    /// I1 for one event: the ledger's refresh calls made under `event \(index)`, reported when
    /// there is more than one; returns them.
    func judgeSingleFlight(event index: Int, name: String, context: String, ledger: [LedgerEntry]) -> [LedgerEntry] {
        let refreshes = ledger.filter { $0.context == "event \(index)" && $0.call == .refresh }
        if refreshes.count > 1 {
            oracle.report(
                .singleFlight, "\(refreshes.count) refresh calls for one \(name) (\(context))",
                trace: refreshes.prefix(3).map(Oracle.describe))
        }
        return refreshes
    }

    /// One event's counts in the run's figures: refresh calls per event, callers served and not.
    func tally(refreshes: Int, answers: Int, failures: Int, outcome: inout DriverOutcome) {
        outcome.refreshCalls += refreshes
        outcome.stormRefreshCalls += refreshes
        outcome.storms += 1
        outcome.stormCallers += answers
        outcome.operations += UInt64(answers - failures)
        outcome.failedCalls += UInt64(failures)
    }

    /// I15 between events: the storage holds the newest generation any caller has been handed, so
    /// the next holder to refresh presents the refresh token the server expects.
    func judgeStorage(after step: String, in directory: String, handed: Set<UInt64>, outcome: inout DriverOutcome) {
        let newest = handed.max() ?? 0
        switch read(directory, outcome: &outcome) {
        case .session(let generation) where generation < newest:
            oracle.report(
                .durableRotation,
                "after \(step) the storage held generation \(generation), but callers had generation \(newest): the "
                    + "next holder to refresh presents a used refresh token")
        case .empty:
            oracle.report(
                .durableRotation, "after \(step) the storage held no session, but callers had generation \(newest)")
        case .unreadable:
            oracle.report(.restorable, "after \(step) the stored session could not be read back")
        case .session, nil:
            break
        }
    }

    /// What the storage holds, read with the backend's own code. A database the driver itself cannot
    /// reach, or a disk that refused the read its writes (opening a database writes), is the run's
    /// problem, not the store's: the run ends in `error`, saying why, and `nil`.
    func read(_ directory: String, outcome: inout DriverOutcome) -> StoredState? {
        do throws(StorageError) {
            return try CrashRestartDriver.read(backend, directory)
        } catch {
            outcome.storageFailed(CrashRestartDriver.unreadable(backend, error))
            return nil
        }
    }

    /// Why the backend's server cannot be reached now, asked with the backend's own code; `nil`
    /// when it answers, or when the backend keeps the session in the folder.
    func databaseOutOfReach(_ directory: String) -> String? {
        guard backend.isServer else { return nil }
        do throws(StorageError) {
            _ = try backend.make(directory: directory).load()
        } catch .unreachable(let why) {
            return why
        } catch {
            return nil
        }
        return nil
    }

    /// I8, I13, I16 after one instance's sign-out: the others' 401s get `signedOut`, nothing is
    /// presented to the server, and the storage is empty.
    func judgeAfterSignOut(
        _ heard: [Heard], in directory: String, ledger: [LedgerEntry], outcome: inout DriverOutcome
    ) {
        let context = "after store instance 0 of process 0 signed out, over one \(backend.name) storage"
        let answers = heard.flatMap(\.answers)
        let served = answers.filter { (try? $0.result.get()) != nil }
        let refreshes = ledger.filter { $0.context == "after sign-out" && $0.call == .refresh }
        if let first = served.first, let generation = try? first.result.get() {
            oracle.report(
                .signOutFence,
                "\(served.count) 401(s) sent after signOut() had returned in another holder got a token of the ended "
                    + "session (generation \(generation)) (\(context))",
                trace: ["first seen at \(first.instance)"] + refreshes.prefix(2).map(Oracle.describe))
        } else if let refresh = refreshes.first {
            oracle.report(
                .signOutFence,
                "the ended session's refresh token was presented after signOut() had returned (\(context))",
                trace: [Oracle.describe(refresh)])
        }
        let refused = ledger.contains { $0.call == .refresh && $0.isInvalidGrant }
        if !refused,
            let other = answers.first(where: { $0.result != .failure(.signedOut) && (try? $0.result.get()) == nil }),
            case .failure(let error) = other.result
        {
            oracle.report(
                .sessionKept, "a 401 sent after the sign-out got \(error) rather than signedOut (\(context))",
                trace: ["first seen at \(other.instance)"])
        }
        if case .session(let generation) = read(directory, outcome: &outcome) {
            oracle.report(
                .signOutDurable,
                "after the sign-out and the others' 401s the storage held a session (generation \(generation)) "
                    + "(\(context))")
        }
    }
}
