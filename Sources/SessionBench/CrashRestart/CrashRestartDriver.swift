import Foundation
import SessionContract
import SessionMeasurement
import SessionOracle
import SessionStorage
import TokenServer

/// Runs `crash-restart`: one storage folder, one token server, and a session process per
/// round, each killed at a crash point drawn from the seed (every point in every pass of the
/// schedule), the next one started on the same storage.
///
/// The driver is the session's network: every sign-in and refresh of a session process comes
/// here, to a server that rotates refresh tokens and detects reuse and whose ledger outlives
/// the processes. What each process's callers were handed is reported line by line as it
/// happens, so the driver knows it even when the process dies. It records that, the ledger and
/// what the storage held (``CrashRestartHistory``); the judge (``CrashRestartJudge``) reads the
/// history after the run.
struct CrashRestartDriver: ContextDriver {
    let context: DriverContext
    let launcher: any SessionProcessLauncher
    let backend: StorageBackend

    /// What one session process did, as it reported it.
    typealias Incarnation = CrashRestartHistory.Life

    func run(outcome: inout DriverOutcome) async {
        let directory: String
        do { directory = try StorageFolders.make() } catch {
            outcome.failure = "could not make a storage folder: \(error)"
            return
        }
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = TokenServer(configuration: scenario.serverConfiguration, clock: .system)
        let subject = "crash-restart-\(scenario.seed)-user@example.test"
        var secrets = Secrets(subject: subject)
        outcome.persistence = PersistenceFigures(
            backend: backend.name, protectsAtRest: backend.protectsAtRest,
            reuseGraceSeconds: scenario.reuseGraceWindow.secondsValue)
        var scan = AtRestScan()
        var random = SeededRandom(seed: scenario.seed ^ 0x5EED)
        var carried = CrashRestartHistory.Carried()
        var history = CrashRestartHistory(
            stormSize: scenario.tasks, backend: backend.name, protectsAtRest: backend.protectsAtRest)
        var pending = CrashPoint.schedule(rounds: scenario.rounds, seed: scenario.seed)
        // The last crash is judged by the process after it: end with a clean one.
        if pending.last != .clean { pending.append(.clean) }
        let started = ContinuousClock.now
        // Every point of the schedule lands on a session whose storm refreshed: a point that
        // fell on a process whose session had just been revoked is tried again, up to a bound.
        while let crash = pending.first, history.lives.count < Self.processLimit(rounds: scenario.rounds) {
            let index = history.lives.count
            let plan = SessionProcessPlan(
                store: descriptor.name, backend: backend.name, directory: directory, incarnation: index,
                signIn: !carried.live, subject: subject, callers: scenario.tasks, readsPerCaller: 200, crash: crash,
                midSaveLimit: 1 + Int(random.next() % 600))
            server.setContext(CrashRestartHistory.context(index, crash, "launch"))
            let link: SessionProcessLink
            do { link = try launcher.launch() } catch {
                outcome.failure = "could not start a session process: \(error)"
                break
            }
            link.send(.plan(plan))
            var life = Incarnation(index: index, crash: crash, signedIn: plan.signIn)
            let stop = await drive(link, plan: plan, life: &life, server: server, secrets: &secrets, outcome: &outcome)
            let end = await link.wait()
            outcome.persistence?.processes += 1
            // What a process did after its disk refused a write is not the store's to answer for.
            if life.storageFailed { break }
            do throws(StorageError) { life.disk = try Self.read(backend, directory) } catch {
                outcome.storageFailed(Self.unreadable(backend, error))
                break
            }
            if case .signaled = end { outcome.persistence?.crashes += 1 }
            if !stop, let signal = end.interruption {
                outcome.failure = ProcessEnd.interrupted("session process \(index)", by: signal)
            } else if !stop, let why = unexpected(end, life) {
                outcome.verdict = .crashed
                outcome.failure = why + (TrapMessage.find(in: link.errors).map { ": \($0)" } ?? "")
            }
            scan.merge(AtRestScan.scan(directory, secrets: secrets.byKind))
            if life.signedOut {
                life.afterSignOut =
                    AtRestScan.scan(directory, secrets: ["the signed-out session's refresh token": secrets.session])
                    .exposures
            }
            life.refused = CrashRestartJudge.refused(
                server.ledger.entries.filter { CrashRestartHistory.process(of: $0) == "process \(index)" })
            carried = carried.next(after: life, restored: history.lives.last?.disk)
            history.lives.append(life)
            if life.landed { pending.removeFirst() }
            if stop || outcome.failure != nil { break }
        }
        outcome.persistence?.pointsNotPlayed = pending.map(\.rawValue)
        outcome.seconds = (ContinuousClock.now - started).secondsValue
        history.ledger = server.ledger.entries
        history.exposures = scan.exposures
        history.looseFiles = scan.looseFiles
        judge(history, scan: scan, outcome: &outcome)
    }

    /// Serves one process until it ends. Returns `true` when the run must stop (a hang, or a
    /// process that could not do its part).
    private func drive(
        _ link: SessionProcessLink, plan: SessionProcessPlan, life: inout Incarnation, server: TokenServer,
        secrets: inout Secrets, outcome: inout DriverOutcome
    ) async -> Bool {
        var held: SessionLine?
        while true {
            switch await link.next(within: runner.hangTimeout) {
            case .closed:
                return false
            case .crowdedOut:
                link.kill()
                outcome.failure = SessionProcessLink.crowdedOut("the session process")
                return true
            case .timedOut:
                link.kill()
                outcome.hang = .init(
                    stuckCallers: max(0, plan.callers - life.got.count), ofCallers: plan.callers,
                    operation: .rejection, waitedSeconds: runner.hangTimeout.secondsValue,
                    phase: "session process \(life.index) (\(life.crash.rawValue))",
                    detail: "no word from the session process for the hang timeout; the server had answered "
                        + "\(server.ledger.entries.filter { CrashRestartHistory.process(of: $0) == "process \(life.index)" }.count) "
                        + "call(s) of it")
                return true
            case .line(let text):
                guard let line = SessionLine(line: text) else { continue }
                switch line {
                case .signInRequest(let id, let user):
                    let result = await server.signInResult(Credentials(subject: Subject(user)))
                    secrets.startSession()
                    if case .success(let grant) = result { secrets.note(grant, in: &life) }
                    link.send(SessionLine.reply(id, result))
                case .refreshRequest(let id, let token):
                    let result = await server.refreshResult(RefreshToken(token))
                    if case .success(let grant) = result { secrets.note(grant, in: &life) }
                    let inStorm = life.first != nil
                    if life.crash == .inFlight, inStorm {
                        // Rotated at the server; the answer never reaches the process.
                        life.killed = true
                        link.kill()
                    } else if life.crash == .signOutDuringRefresh, inStorm, !life.signedOut {
                        held = SessionLine.reply(id, result)  // answered once signOut() has returned
                    } else {
                        link.send(SessionLine.reply(id, result))
                    }
                case .first(let first):
                    life.first = first
                    server.setContext(CrashRestartHistory.context(life.index, life.crash, "storm"))
                case .got(let got): life.got.append(got)
                case .saved(let nanoseconds): outcome.latencies.record(.save, nanoseconds: nanoseconds)
                case .reads(let count, let calls):
                    outcome.persistence?.readsChecked += count
                    outcome.persistence?.storageCallsDuringReads += calls
                case .signedOut:
                    life.signedOut = true
                    if let reply = held { link.send(reply) }
                    held = nil
                    if life.crash == .afterSignOut {
                        life.killed = true
                        link.kill()
                    }
                case .done:
                    life.done = true
                    if life.crash == .clean {
                        link.closeInput()
                    } else {
                        life.killed = true
                        link.kill()
                    }
                case .problem(let why):
                    link.kill()
                    outcome.failure = "the session process could not run: \(why)"
                    return true
                case .unreachable(let why):
                    link.kill()
                    life.storageFailed = true
                    outcome.storageFailed(SessionProcesses.unreachable(why))
                    return true
                case .storageFailed(let why):
                    // The store may carry on in memory, as it should; the round cannot: what it
                    // would judge next is what the disk refused, not what the store did.
                    link.kill()
                    life.storageFailed = true
                    outcome.storageFailed("\(why) (session process \(life.index), \(life.crash.rawValue))")
                    return true
                case .plan, .grant, .failure, .round, .answered, .roundDone, .inTurn, .overheads: continue
                }
            }
        }
    }

    /// Why a process's end is not one the round caused, or `nil` when it is.
    private func unexpected(_ end: ProcessEnd, _ life: Incarnation) -> String? {
        switch end {
        case .exited(0) where life.crash == .clean && life.done: return nil
        case .signaled(SIGKILL) where life.killed || life.crash.firesInStorage: return nil
        case .signaled(SIGXFSZ) where life.crash == .midSave: return nil
        case .signaled(let signal):
            return "the store crashed session process \(life.index) (\(life.crash.rawValue)): signal \(signal)"
        case .exited(let status):
            return "session process \(life.index) (\(life.crash.rawValue)) exited with status \(status) "
                + "before its round ended"
        }
    }

    /// At most this many processes: every scheduled point, and as many again for points that
    /// fell on a session that had just been revoked.
    static func processLimit(rounds: Int) -> Int { rounds * 2 }

    /// What the storage holds, read by the driver with the backend's own code: what any
    /// process started now would find, whether or not the store reads it eagerly. A session
    /// stored but not readable is ``StoredState/unreadable``, the store's or the backend's to
    /// answer for; a read the disk or the server refused (opening a database writes) throws: the
    /// harness could not look, and the run ends in `error`, saying why.
    static func read(_ backend: StorageBackend, _ directory: String) throws(StorageError) -> StoredState {
        do throws(StorageError) {
            let storage = try backend.make(directory: directory)
            return try storage.load().map { .session(generation: $0.accessToken.generation) } ?? .empty
        } catch .unreadable {
            return .unreadable
        }
    }

    /// The run's failure when the driver could not read the storage back.
    static func unreadable(_ backend: StorageBackend, _ error: StorageError) -> String {
        if case .unreachable(let why) = error { return SessionProcesses.unreachable(why) }
        return "the harness could not read the \(backend.name) storage back: \(error)"
    }
}
