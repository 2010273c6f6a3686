import SessionContract
import SessionMeasurement
import SessionOracle
import SessionStorage
import TokenServer

/// How `shared-storage` and `replicas` hear their session processes: every process served at
/// once, its token-endpoint calls answered by the driver's server, until each has said what the
/// phase waits for.
extension SharedStorageDriver {
    /// What one process sent while the driver waited on it.
    struct Heard {
        var firsts: [Result<UInt64, SessionError>] = []
        var answers: [(instance: String, result: Result<UInt64, SessionError>, nanoseconds: Int64)] = []
        var saves: [Int64] = []
        var grants: [TokenGrant] = []
        /// Steps the process has finished.
        var done: Set<Int> = []
        /// `replicas`: the instance told to crash or stall holds its turn.
        var inTurn = false
        /// What the network added to the process's refresh calls (`replicas` over HTTP).
        var overheads: [Int64] = []
        /// `replicas`: reads made, and storage calls made while they ran.
        var reads = 0
        var readStorageCalls = 0
        var end = End.complete
    }

    enum End {
        case complete
        case closed
        case timedOut
        case crowdedOut
        case problem(String)
        /// The process found the storage's server out of reach.
        case unreachable(String)
        /// A storage call of the process failed to write (a full disk, a failing one).
        case storageFailed(String)
    }

    /// Takes what a phase brought: the grants the server issued (for the at-rest scan) and the
    /// saves' times; stops the run on a hang, a process that could not run, or one that ended.
    /// A database out of reach, or a disk that refused a write, stops it as an error of the run,
    /// never a hang or a finding against the store: said by a process, or (a database) found by
    /// the driver when a process went quiet.
    func accept(
        _ heard: [Heard], links: [SessionProcessLink], phase: String, directory: String, secrets: inout Secrets,
        outcome: inout DriverOutcome
    ) -> Bool {
        for part in heard {
            for grant in part.grants { secrets.note(grant) }
            for nanoseconds in part.saves { outcome.latencies.record(.save, nanoseconds: nanoseconds) }
            outcome.transportOverheads += part.overheads
        }
        // A disk that refused a write stopped every process (``serve``): the others' ends are its.
        for (index, part) in heard.enumerated() {
            guard case .storageFailed(let why) = part.end else { continue }
            outcome.storageFailed("\(why) (session process \(index), \(phase))")
            return false
        }
        for (index, part) in heard.enumerated() {
            switch part.end {
            case .complete: continue
            case .unreachable(let why):
                outcome.storageFailed(SessionProcesses.unreachable(why))
            case .storageFailed:
                break  // above
            case .timedOut:
                if let why = databaseOutOfReach(directory) {
                    outcome.storageFailed(SessionProcesses.unreachable(why))
                    break
                }
                let expected = instancesPerProcess * scenario.tasks
                outcome.hang = .init(
                    stuckCallers: max(0, expected - part.answers.count), ofCallers: expected,
                    operation: phase == "reads" ? .read : .rejection,
                    waitedSeconds: patience.secondsValue, phase: "session process \(index), \(phase)",
                    detail: "no word from session process \(index) for the hang timeout"
                        + (backend.lockTimeout.map { " and the lock's timeout (\(InputRange.text($0.secondsValue)) s)" }
                            ?? "")
                        + " (\(phase))")
            case .closed:
                outcome.failure =
                    "session process \(index) ended during \(phase)"
                    + (TrapMessage.find(in: links[index].errors).map { ": \($0)" } ?? "")
                outcome.verdict = .crashed
            case .crowdedOut:
                if let why = databaseOutOfReach(directory) {
                    outcome.storageFailed(SessionProcesses.unreachable(why))
                    break
                }
                outcome.failure = SessionProcessLink.crowdedOut("session process \(index) (\(phase))")
            case .problem(let why):
                outcome.failure = "the session process could not run: \(why)"
            }
            return false
        }
        return true
    }

    /// How long a process may say nothing before it counts as hung: the hang timeout, and the
    /// storage lock's timeout on top, for a holder may wait that long on a stalled or dead holder's
    /// lock before it can answer anything.
    var patience: Duration { runner.hangTimeout + (backend.lockTimeout ?? .zero) }

    /// Serves every process at once — their token-endpoint calls go to the server — until each
    /// has sent what `enough` asks for, or goes quiet for ``patience``.
    /// Processes in `dead` (killed by the driver) are not waited on; their part is empty.
    /// A process whose disk refused a write ends the run: every process is killed then, so none
    /// waits on one that is no longer served (a holder of the lock asking for a refresh).
    func serve(
        _ links: [SessionProcessLink], server: TokenServer, dead: Set<Int> = [],
        until enough: @escaping @Sendable (Heard) -> Bool
    ) async -> [Heard] {
        let patience = patience
        return await withTaskGroup(of: (Int, Heard).self) { group in
            for (index, link) in links.enumerated() where !dead.contains(index) {
                group.addTask {
                    var heard = Heard()
                    // The processes that share the storage with this one: its callers may wait on
                    // a lock one of them holds.
                    let peers = links.enumerated().filter { $0.offset != index && !dead.contains($0.offset) }.map(
                        \.element)
                    while !enough(heard) {
                        switch await link.next(within: patience, peers: peers) {
                        case .closed:
                            heard.end = .closed
                            return (index, heard)
                        case .timedOut:
                            heard.end = .timedOut
                            return (index, heard)
                        case .crowdedOut:
                            heard.end = .crowdedOut
                            return (index, heard)
                        case .line(let text):
                            guard let line = SessionLine(line: text) else { continue }
                            switch line {
                            case .refreshRequest(let id, let token):
                                let result = await server.refreshResult(RefreshToken(token))
                                if case .success(let grant) = result { heard.grants.append(grant) }
                                link.send(SessionLine.reply(id, result))
                            case .signInRequest(let id, let user):
                                let result = await server.signInResult(Credentials(subject: Subject(user)))
                                if case .success(let grant) = result { heard.grants.append(grant) }
                                link.send(SessionLine.reply(id, result))
                            case .first(let first): heard.firsts.append(first)
                            case .answered(let instance, let result, let nanoseconds):
                                heard.answers.append(
                                    ("process \(index), store instance \(instance)", result, nanoseconds))
                            case .saved(let nanoseconds): heard.saves.append(nanoseconds)
                            case .roundDone(let index): heard.done.insert(index)
                            case .inTurn: heard.inTurn = true
                            case .overheads(let nanoseconds): heard.overheads += nanoseconds
                            case .reads(let count, let calls):
                                heard.reads += count
                                heard.readStorageCalls += calls
                            case .problem(let why):
                                heard.end = .problem(why)
                                return (index, heard)
                            case .unreachable(let why):
                                heard.end = .unreachable(why)
                                return (index, heard)
                            case .storageFailed(let why):
                                heard.end = .storageFailed(why)
                                for other in links { other.kill() }
                                return (index, heard)
                            default: continue
                            }
                        }
                    }
                    return (index, heard)
                }
            }
            var heard = [Heard](repeating: Heard(), count: links.count)
            for await (index, part) in group { heard[index] = part }
            return heard
        }
    }
}
