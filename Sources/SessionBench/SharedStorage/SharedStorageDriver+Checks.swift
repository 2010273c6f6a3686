import SessionContract
import SessionOracle
import SessionStorage
import TokenServer

/// What `shared-storage` records of each event, for ``SharedStorageJudge``: what the instances'
/// callers got, the server's ledger and what the storage holds, read with the backend's own code.
/// None of it looks inside a store.
extension SharedStorageDriver {
    typealias Event = SharedStorageHistory.Event

    /// The answers heard, as the judge reads them.
    static func answers(_ heard: [Heard]) -> [SharedStorageHistory.Answer] {
        heard.flatMap(\.answers).map { .init(instance: $0.instance, result: $0.result) }
    }

    /// Records one event and counts it in the run's figures.
    func record(
        _ event: Event, heard: [Heard], ledger: [LedgerEntry], crowded: Bool, history: inout SharedStorageHistory,
        outcome: inout DriverOutcome
    ) {
        history.observations.append(.event(event, answers: Self.answers(heard), ledger: ledger, crowded: crowded))
        tally(event: event.index, heard: heard, ledger: ledger, outcome: &outcome)
    }

    /// Whether an event's wait, from `start`, says nothing of a lock with a timeout: the machine
    /// crowded a process (or this one) out of the CPUs or the disk (``crowded(since:from:links:leaving:dead:)``),
    /// so the holder's refresh could outlast the others' wait through no fault of its store.
    /// (Not the network's trip times: the store's own process measures them.)
    func crowded(
        since start: ContinuousClock.Instant, from sample: CrowdingSample, links: [SessionProcessLink], dead: Set<Int>
    ) -> Bool {
        guard backend.lockTimeout != nil else { return false }
        return Self.crowded(since: start, from: sample, links: links, leaving: -1, dead: dead)
    }

    /// What the judge counted, in the run's figures. A run with no finding whose events mostly had
    /// their failed lock waits excused on a crowded machine did not earn a pass: it ends in error.
    func count(_ tally: SharedStorageJudge.Tally, findings: [ContractJudge.Finding], outcome: inout DriverOutcome) {
        outcome.persistence?.grantsTaken += tally.grantsTaken
        guard tally.crowdedEvents > 0 else { return }
        outcome.persistence?.crowdedEvents = tally.crowdedEvents
        outcome.persistence?.grantsNotCounted = tally.grantsNotCounted
        if outcome.failure == nil, findings.isEmpty, tally.crowdedEvents * 2 > scenario.rounds {
            outcome.failure =
                "\(tally.crowdedEvents) of \(scenario.rounds) events ran on a machine that kept the processes from a "
                + "CPU or the disk while callers waited on the \(backend.name) lock: too busy to judge the store "
                + "(run on a quieter machine)"
        }
    }

    /// One event's counts in the run's figures: refresh calls per event, callers served and not.
    func tally(event index: Int, heard: [Heard], ledger: [LedgerEntry], outcome: inout DriverOutcome) {
        let refreshes = SharedStorageJudge.refreshes(event: index, in: ledger).count
        let answers = heard.flatMap(\.answers)
        let failures = answers.count { (try? $0.result.get()) == nil }
        outcome.refreshCalls += refreshes
        outcome.stormRefreshCalls += refreshes
        outcome.storms += 1
        outcome.stormCallers += answers.count
        outcome.operations += UInt64(answers.count - failures)
        outcome.failedCalls += UInt64(failures)
    }

    /// Records what the storage holds after `step`, with the newest generation any caller has been
    /// handed: the next holder to refresh must find it (I15).
    func recordStorage(
        after step: String, in directory: String, handed: Set<UInt64>, history: inout SharedStorageHistory,
        outcome: inout DriverOutcome
    ) {
        guard let held = read(directory, outcome: &outcome) else { return }
        history.observations.append(.storage(after: step, held: held, newest: handed.max() ?? 0))
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

    /// Records the others' 401s after one instance's sign-out, and what the storage holds then.
    func recordAfterSignOut(
        _ heard: [Heard], in directory: String, ledger: [LedgerEntry], history: inout SharedStorageHistory,
        outcome: inout DriverOutcome
    ) {
        history.observations.append(
            .afterSignOut(answers: Self.answers(heard), ledger: ledger, held: read(directory, outcome: &outcome)))
    }
}
