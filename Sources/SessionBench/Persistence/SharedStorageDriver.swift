import Foundation
import SessionContract
import SessionStorage
import TokenServer

/// Runs `shared-storage`: one saved session, one storage folder, and two session processes with
/// two instances of the store each, every instance over a storage object of its own on that
/// folder — an app and its extension over one Keychain item, or two workers over one file.
///
/// The driver signs in, saves the grant with the backend's own code, and starts the processes;
/// every instance restores the session. Then events, four kinds in turn: a 401 storm by every
/// instance (each first reads the token it holds, all of them before any 401 is sent), an
/// expiry for every instance (the manual clock the processes share with the server moves past
/// the token's lifetime), a 401 storm by one instance alone, and an expiry for every instance but
/// that one — so the others find a grant newer than theirs in storage that has expired as well.
/// Each event needs one new token for the whole session: the server's ledger must show exactly
/// one refresh call per event across all instances and processes, each caller must get a token
/// newer than the one its 401 was for (or, after an expiry, one issued after it), no refresh
/// token may be presented twice, and the storage must hold the newest token any caller has.
/// Last, one instance signs out and the others report 401s: the shared session is over, so
/// they must get `signedOut`, present nothing to the server, and leave the storage empty.
struct SharedStorageDriver {
    let runner: ScenarioRunner
    let descriptor: StoreDescriptor
    let scenario: Scenario
    let oracle: Oracle
    let launcher: any SessionProcessLauncher
    let backend: StorageBackend

    static let processes = 2
    static let instancesPerProcess = 2
    static var holders: Int { processes * instancesPerProcess }

    /// What one process sent while the driver waited on it.
    struct Heard {
        var firsts: [Result<UInt64, SessionError>] = []
        var answers: [(instance: String, result: Result<UInt64, SessionError>, nanoseconds: Int64)] = []
        var saves: [Int64] = []
        var grants: [TokenGrant] = []
        /// Steps the process has finished.
        var done: Set<Int> = []
        var end = End.complete
    }

    enum End {
        case complete
        case closed
        case timedOut
        case problem(String)
    }

    func run(outcome: inout DriverOutcome) async {
        let directory: String
        do { directory = try StorageFolders.make() } catch {
            outcome.failure = "could not make a storage folder: \(error)"
            return
        }
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let time = ManualTime()
        let server = TokenServer(
            configuration: .init(
                tokenLifetime: scenario.tokenLifetime, reuseGraceWindow: scenario.reuseGraceWindow,
                latency: scenario.latency, seed: scenario.seed),
            clock: .manual(time))
        let subject = "shared-storage-\(scenario.seed)-user@example.test"
        var secrets = Secrets(subject: subject)
        outcome.persistence = PersistenceFigures(
            backend: backend.name, protectsAtRest: backend.protectsAtRest,
            reuseGraceSeconds: scenario.reuseGraceWindow.secondsValue)
        outcome.persistence?.holders = Self.holders
        let started = ContinuousClock.now

        server.setContext("sign-in")
        let grant: TokenGrant
        switch await server.signInResult(Credentials(subject: Subject(subject))) {
        case .success(let signedIn): grant = signedIn
        case .failure(let error):
            outcome.failure = "the token server refused the sign-in: \(error)"
            return
        }
        secrets.note(grant)
        do throws(StorageError) { try backend.make(directory: directory).save(grant) } catch {
            outcome.failure = "could not save the session to \(backend.name): \(error)"
            return
        }

        var links: [SessionProcessLink] = []
        // What the storage's files held while the session was live: scanned after every event, so a
        // store that loses the session early still shows what its backend kept.
        var atRest: AtRestScan?
        var handed: Set<UInt64> = [grant.accessToken.generation]
        server.setContext("launch")
        var completed = false
        do {
            for index in 0..<Self.processes {
                links.append(try launcher.launch())
                links[index].send(
                    .plan(
                        SessionProcessPlan(
                            store: descriptor.name, backend: backend.name, directory: directory, incarnation: index,
                            signIn: false, subject: subject, callers: scenario.tasks, readsPerCaller: 0,
                            crash: .clean, midSaveLimit: 0, instances: Self.instancesPerProcess,
                            clockStart: time.now.nanoseconds)))
            }
            completed = await drive(
                links, server: server, time: time, saved: grant, directory: directory, handed: &handed,
                atRest: &atRest, secrets: &secrets,
                outcome: &outcome)
        } catch {
            outcome.failure = "could not start a session process: \(error)"
        }
        // A finished run lets the processes exit; a stopped one kills them. Either way, each is
        // reaped before the run reports.
        for link in links {
            if completed { link.closeInput() } else { link.kill() }
        }
        for (index, link) in links.enumerated() {
            let end = await link.wait()
            if completed, case .signaled(let signal) = end {
                outcome.verdict = .crashed
                outcome.failure =
                    "the store crashed session process \(index): signal \(signal)"
                    + (TrapMessage.find(in: link.errors).map { ": \($0)" } ?? "")
            }
        }
        outcome.persistence?.processes = Self.processes
        outcome.seconds = (ContinuousClock.now - started).secondsValue
        oracle.auditLedger(server.ledger.entries, observed: { handed.contains($0) })
        if let atRest { CrashRestartDriver.judgeAtRest(atRest, backend: backend, oracle: oracle, outcome: &outcome) }
    }

    /// The launch, the events and the sign-out. Returns `false` when the run had to stop (a hang, a
    /// process that could not run or ended).
    private func drive(
        _ links: [SessionProcessLink], server: TokenServer, time: ManualTime, saved grant: TokenGrant,
        directory: String, handed: inout Set<UInt64>, atRest: inout AtRestScan?, secrets: inout Secrets,
        outcome: inout DriverOutcome
    ) async -> Bool {
        let launch = await serve(links, server: server, until: { $0.firsts.count == Self.instancesPerProcess })
        guard accept(launch, links: links, phase: "launch", secrets: &secrets, outcome: &outcome) else { return false }
        for (index, heard) in launch.enumerated() {
            for first in heard.firsts {
                switch first {
                case .success(let generation): handed.insert(generation)
                case .failure(let error):
                    oracle.report(
                        .durableRotation,
                        "a store instance in process \(index) was made over the saved session (generation "
                            + "\(grant.accessToken.generation)) but its first call got \(error)")
                }
            }
        }
        var step = 0
        func run(_ action: SharedRound.Action, _ holders: [Int], advance: Duration = .zero, context: String)
            async -> [Heard]?
        {
            time.advance(by: advance)
            server.setContext(context)
            let round = SharedRound(index: step, action: action, advance: advance.nanosecondsClamped, holders: holders)
            step += 1
            for link in links { link.send(.round(round)) }
            let heard = await serve(links, server: server) { $0.done.contains(round.index) }
            return accept(heard, links: links, phase: context, secrets: &secrets, outcome: &outcome) ? heard : nil
        }
        let everyone = Array(0..<Self.holders)
        for event in 0..<scenario.rounds {
            let context = "event \(event)"
            let alone = (event / 4) % Self.holders
            let (kind, holders): (SharedRound.Action, [Int]) =
                switch event % 4 {
                case 0: (.storm, everyone)
                case 1: (.expiry, everyone)
                case 2: (.storm, [alone])
                default: (.expiry, everyone.filter { $0 != alone })
                }
            let issuedBefore = server.ledger.entries.compactMap(\.issuedGeneration).max() ?? 0
            var held: [String: UInt64] = [:]
            if kind == .storm {
                guard let reads = await run(.hold, holders, context: context) else { return false }
                for answer in reads.flatMap(\.answers) {
                    outcome.latencies.record(.read, nanoseconds: answer.nanoseconds)
                    if let generation = try? answer.result.get() {
                        held[answer.instance] = generation
                        handed.insert(generation)
                    }
                }
            }
            let advance = kind == .expiry ? scenario.tokenLifetime + .seconds(1) : .zero
            guard let heard = await run(kind, holders, advance: advance, context: context) else { return false }
            for answer in heard.flatMap(\.answers) {
                outcome.latencies.record(kind == .expiry ? .refreshWait : .rejection, nanoseconds: answer.nanoseconds)
                if let generation = try? answer.result.get() { handed.insert(generation) }
            }
            judge(
                Event(
                    index: event, expiry: kind == .expiry, holders: holders.count, issuedBefore: issuedBefore,
                    held: held),
                heard: heard, ledger: server.ledger.entries, outcome: &outcome)
            judgeStorage(after: "event \(event)", in: directory, handed: handed)
            var seen = atRest ?? AtRestScan()
            seen.merge(AtRestScan.scan(directory, secrets: secrets.byKind))
            atRest = seen
        }
        // One instance signs out; the others' next refresh must find the shared session over.
        guard await run(.signOut, [0], context: "sign-out") != nil else { return false }
        let others = Array(1..<Self.holders)
        guard await run(.hold, others, context: "after sign-out") != nil,
            let after = await run(.storm, others, context: "after sign-out")
        else { return false }
        judgeAfterSignOut(after, in: directory, ledger: server.ledger.entries)
        let ended = AtRestScan.scan(directory, secrets: ["the signed-out session's refresh token": secrets.session])
        if ended.holdsPlaintext {
            oracle.report(
                .signOutDurable, "after the sign-out, the ended session's refresh token was still on disk",
                trace: ended.exposures)
        }
        return true
    }

    /// Takes what a phase brought: the grants the server issued (for the at-rest scan) and the
    /// saves' times; stops the run on a hang, a process that could not run, or one that ended.
    private func accept(
        _ heard: [Heard], links: [SessionProcessLink], phase: String, secrets: inout Secrets,
        outcome: inout DriverOutcome
    ) -> Bool {
        for part in heard {
            for grant in part.grants { secrets.note(grant) }
            for nanoseconds in part.saves { outcome.latencies.record(.save, nanoseconds: nanoseconds) }
        }
        for (index, part) in heard.enumerated() {
            switch part.end {
            case .complete: continue
            case .timedOut:
                let expected = Self.instancesPerProcess * scenario.tasks
                outcome.hang = .init(
                    stuckCallers: max(0, expected - part.answers.count), ofCallers: expected, operation: .rejection,
                    waitedSeconds: runner.hangTimeout.secondsValue, phase: "session process \(index), \(phase)",
                    detail: "no word from session process \(index) for the hang timeout (\(phase))")
            case .closed:
                outcome.failure =
                    "session process \(index) ended during \(phase)"
                    + (TrapMessage.find(in: links[index].errors).map { ": \($0)" } ?? "")
                outcome.verdict = .crashed
            case .problem(let why):
                outcome.failure = "the session process could not run: \(why)"
            }
            return false
        }
        return true
    }

    /// Serves every process at once — their token-endpoint calls go to the server — until each
    /// has sent what `enough` asks for, or goes quiet for the hang timeout.
    private func serve(
        _ links: [SessionProcessLink], server: TokenServer, until enough: @escaping @Sendable (Heard) -> Bool
    ) async -> [Heard] {
        await withTaskGroup(of: (Int, Heard).self) { group in
            for (index, link) in links.enumerated() {
                group.addTask { [runner] in
                    var heard = Heard()
                    while !enough(heard) {
                        switch await link.next(within: runner.hangTimeout) {
                        case .closed:
                            heard.end = .closed
                            return (index, heard)
                        case .timedOut:
                            heard.end = .timedOut
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
                            case .problem(let why):
                                heard.end = .problem(why)
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
