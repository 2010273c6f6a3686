import Foundation
import SessionContract
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
/// happens, so the driver knows it even when the process dies. The checks
/// (`CrashRestartDriver+Checks`) read only that, the ledger and the storage's files.
struct CrashRestartDriver: ContextDriver {
    let context: DriverContext
    let launcher: any SessionProcessLauncher
    let backend: StorageBackend

    /// What one session process did, as it reported it.
    struct Incarnation {
        let index: Int
        let crash: CrashPoint
        let signedIn: Bool
        var first: Result<UInt64, SessionError>?
        var got: [Result<UInt64, SessionError>] = []
        var signedOut = false
        var done = false
        var killed = false
        /// Generations the server issued to this process, delivered or not, and those issued to
        /// its storm (after its first token).
        var issued: [UInt64] = []
        var issuedInStorm: [UInt64] = []
        var end: ProcessEnd?
        /// What the storage held once the process had ended, read by the driver itself.
        var disk: StoredState = .empty
        /// The server refused a refresh token of this process (`invalid_grant`): the session is
        /// over at the server whether or not a caller lived to hear it.
        var refused = false
        /// A storage call of this process failed to write: the run ends here, this process unjudged.
        var storageFailed = false

        /// The round did what its crash point needs: its storm got a grant from the server.
        /// Otherwise (the session had just been revoked) the point is tried again.
        var landed: Bool { crash == .clean || !issuedInStorm.isEmpty }

        /// The highest generation any caller of this process was handed.
        var handed: UInt64 {
            ([first].compactMap { try? $0?.get() } + got.compactMap { try? $0.get() }).max() ?? 0
        }

        var sawRevocation: Bool {
            refused || first == .failure(.refreshTokenRevoked) || got.contains(.failure(.refreshTokenRevoked))
        }
    }

    /// The session as the previous process left it.
    struct Carried {
        var live = false
        var ended = false
        var handed: UInt64 = 0
        var latestIssued: UInt64 = 0
        var crash = CrashPoint.clean
    }

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
        var carried = Carried()
        var lives: [Incarnation] = []
        var pending = CrashPoint.schedule(rounds: scenario.rounds, seed: scenario.seed)
        // The last crash is judged by the process after it: end with a clean one.
        if pending.last != .clean { pending.append(.clean) }
        let started = ContinuousClock.now
        // Every point of the schedule lands on a session whose storm refreshed: a point that
        // fell on a process whose session had just been revoked is tried again, up to a bound.
        while let crash = pending.first, lives.count < Self.processLimit(rounds: scenario.rounds) {
            let index = lives.count
            let plan = SessionProcessPlan(
                store: descriptor.name, backend: backend.name, directory: directory, incarnation: index,
                signIn: !carried.live, subject: subject, callers: scenario.tasks, readsPerCaller: 200, crash: crash,
                midSaveLimit: 1 + Int(random.next() % 600))
            server.setContext(Self.context(index, crash, "launch"))
            let link: SessionProcessLink
            do { link = try launcher.launch() } catch {
                outcome.failure = "could not start a session process: \(error)"
                break
            }
            link.send(.plan(plan))
            var life = Incarnation(index: index, crash: crash, signedIn: plan.signIn)
            let stop = await drive(link, plan: plan, life: &life, server: server, secrets: &secrets, outcome: &outcome)
            let end = await link.wait()
            life.end = end
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
                let ended = AtRestScan.scan(
                    directory, secrets: ["the signed-out session's refresh token": secrets.session])
                judgeSignOutLeftovers(ended, life)
            }
            let entries = server.ledger.entries.filter { Self.process(of: $0) == "process \(index)" }
            life.refused = entries.contains { $0.call == .refresh && $0.isInvalidGrant }
            if index > 0 { judgeRestart(after: carried, lives.last!, life, entries: entries, outcome: &outcome) }
            carried = Self.carry(carried, life, restored: lives.last?.disk)
            lives.append(life)
            if life.landed { pending.removeFirst() }
            if stop || outcome.failure != nil { break }
        }
        outcome.persistence?.pointsNotPlayed = pending.map(\.rawValue)
        outcome.seconds = (ContinuousClock.now - started).secondsValue
        auditLedger(server.ledger.entries, lives: lives, outcome: &outcome)
        Self.judgeAtRest(scan, backend: backend, oracle: oracle, outcome: &outcome)
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
                        + "\(server.ledger.entries.filter { Self.process(of: $0) == "process \(life.index)" }.count) "
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
                    server.setContext(Self.context(life.index, life.crash, "storm"))
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
                    outcome.storageFailed(SharedStorageDriver.unreachable(why))
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

    /// How `life` leaves the session for the next process. A rotation lost before `life` was
    /// judged at its start and is gone: the session goes on from what `life` restored.
    private static func carry(_ carried: Carried, _ life: Incarnation, restored: StoredState?) -> Carried {
        var next = Carried()
        let hasSession = (try? life.first?.get()) != nil
        next.ended = life.signedOut
        next.live = hasSession && !life.signedOut && !life.sawRevocation
        next.handed = life.signedIn ? life.handed : max(carried.handed, life.handed)
        var base: UInt64 = 0
        if !life.signedIn, case .session(let generation)? = restored { base = generation }
        next.latestIssued = max(base, life.issued.max() ?? 0)
        next.crash = life.crash
        return next
    }

    /// The server's context for a process's calls: `process 3, mid-save, storm`.
    static func context(_ index: Int, _ crash: CrashPoint, _ phase: String) -> String {
        "process \(index), \(crash.rawValue), \(phase)"
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
        if case .unreachable(let why) = error { return SharedStorageDriver.unreachable(why) }
        return "the harness could not read the \(backend.name) storage back: \(error)"
    }
}
