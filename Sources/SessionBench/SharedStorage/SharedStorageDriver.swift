import Foundation
import SessionContract
import SessionMeasurement
import SessionOracle
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
struct SharedStorageDriver: ContextDriver {
    let context: DriverContext
    let launcher: any SessionProcessLauncher
    let backend: StorageBackend

    /// Session processes, and store instances in each: 2 × 2 in `shared-storage`; in `replicas`,
    /// one instance in each of the scenario's replicas.
    var processes: Int { scenario.kind == .replicas ? scenario.replicas ?? Scenario.defaultReplicas : 2 }
    var instancesPerProcess: Int { scenario.kind == .replicas ? 1 : 2 }
    var holders: Int { processes * instancesPerProcess }
    /// `replicas`: reads by each caller in the read phase — 128,000 in all, 2,000 each with the
    /// default 4 × 16 callers — and never fewer than 100: many replicas of many callers on a few
    /// cores would otherwise read past the hang timeout.
    var readsPerCaller: Int { max(100, 128_000 / max(1, processes * scenario.tasks)) }

    func run(outcome: inout DriverOutcome) async {
        let directory: String
        do { directory = try StorageFolders.make() } catch {
            outcome.failure = "could not make a storage folder: \(error)"
            return
        }
        defer {
            backend.discard(directory: directory)
            try? FileManager.default.removeItem(atPath: directory)
        }
        let time = ManualTime()
        let server = TokenServer(configuration: scenario.serverConfiguration, clock: .manual(time))
        let subject = "shared-storage-\(scenario.seed)-user@example.test"
        var secrets = Secrets(subject: subject)
        outcome.persistence = PersistenceFigures(
            backend: backend.name, protectsAtRest: backend.protectsAtRest,
            reuseGraceSeconds: scenario.reuseGraceWindow.secondsValue)
        outcome.persistence?.holders = holders
        // Not scanned for a database (its rows are not files here); the backend says whether it seals.
        if backend.isServer { outcome.persistence?.plaintextAtRest = !backend.protectsAtRest }
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
        do throws(StorageError) { try backend.make(directory: directory).save(grant) } catch .unreachable(let why) {
            outcome.storageFailed(SessionProcesses.unreachable(why))
            return
        } catch {
            outcome.storageFailed("could not save the session to \(backend.name): \(error)")
            return
        }

        var history = SharedStorageHistory(
            backend: backend.name, holders: holders, processes: processes, saved: grant.accessToken.generation,
            lockTimeout: backend.lockTimeout?.secondsValue)
        var links: [SessionProcessLink] = []
        // What the storage's files held while the session was live: scanned after every event, so a
        // store that loses the session early still shows what its backend kept.
        var atRest: AtRestScan?
        var handed: Set<UInt64> = [grant.accessToken.generation]
        server.setContext("launch")
        var completed = false
        // Processes the driver killed on purpose (`replicas`: the lock holder).
        var dead: Set<Int> = []
        // `replicas` reach the server over the network when the build has one (HTTP on loopback):
        // the same server object, so the same ledger, whichever way a call came.
        var served: ServedTokenServer?
        if scenario.kind == .replicas, let network = runner.network {
            do { served = try await network.serve(server) } catch {
                outcome.failure = "could not serve the token server over \(network.name): \(error)"
                return
            }
            outcome.transportName = network.name
        }
        defer { served?.stop() }
        do {
            for index in 0..<processes {
                links.append(try launcher.launch())
                links[index].send(
                    .plan(
                        SessionProcessPlan(
                            store: descriptor.name, backend: backend.name, directory: directory, incarnation: index,
                            signIn: false, subject: subject, callers: scenario.tasks,
                            readsPerCaller: scenario.kind == .replicas ? readsPerCaller : 0,
                            crash: .clean, midSaveLimit: 0, instances: instancesPerProcess,
                            clockStart: time.now.nanoseconds, serverURL: served?.url)))
            }
            completed = await drive(
                links, server: server, time: time, saved: grant, directory: directory, handed: &handed,
                atRest: &atRest, secrets: &secrets, dead: &dead, history: &history,
                outcome: &outcome)
        } catch {
            outcome.failure = "could not start a session process: \(error)"
        }
        // A finished run lets the processes exit; a stopped one kills them. Either way, each is
        // reaped before the run reports.
        for (index, link) in links.enumerated() where !dead.contains(index) {
            if completed { link.closeInput() } else { link.kill() }
        }
        for (index, link) in links.enumerated() where !dead.contains(index) {
            let end = await link.wait()
            if completed, let signal = end.interruption {
                outcome.failure = ProcessEnd.interrupted("session process \(index)", by: signal)
            } else if completed, case .signaled(let signal) = end {
                outcome.verdict = .crashed
                outcome.failure =
                    "the store crashed session process \(index): signal \(signal)"
                    + (TrapMessage.find(in: link.errors).map { ": \($0)" } ?? "")
            }
        }
        outcome.persistence?.processes = processes
        outcome.seconds = (ContinuousClock.now - started).secondsValue
        let (findings, tally) = SharedStorageJudge.judge(history)
        oracle.record(findings)
        count(tally, findings: findings, outcome: &outcome)
        // After the database went out of reach or the disk refused a write, what the stores did is
        // not theirs to answer for.
        if !outcome.storageFault {
            oracle.auditLedger(server.ledger.entries, observed: { handed.contains($0) })
        }
        if let atRest { atRest.judge(backend: backend, oracle: oracle, outcome: &outcome) }
    }

    /// The launch, the events and the sign-out. Returns `false` when the run had to stop (a hang, a
    /// process that could not run or ended).
    private func drive(
        _ links: [SessionProcessLink], server: TokenServer, time: ManualTime, saved grant: TokenGrant,
        directory: String, handed: inout Set<UInt64>, atRest: inout AtRestScan?, secrets: inout Secrets,
        dead: inout Set<Int>, history: inout SharedStorageHistory, outcome: inout DriverOutcome
    ) async -> Bool {
        let launch = await serve(links, server: server, until: { $0.firsts.count == instancesPerProcess })
        guard accept(launch, links: links, phase: "launch", directory: directory, secrets: &secrets, outcome: &outcome)
        else { return false }
        for (index, heard) in launch.enumerated() {
            for case .success(let generation) in heard.firsts { handed.insert(generation) }
            history.observations.append(.firsts(process: index, results: heard.firsts))
        }
        var step = 0
        func run(_ action: SharedRound.Action, _ holders: [Int], advance: Duration = .zero, context: String)
            async -> [Heard]?
        {
            time.advance(by: advance)
            server.setContext(context)
            let round = SharedRound(index: step, action: action, advance: advance.nanosecondsClamped, holders: holders)
            step += 1
            for (index, link) in links.enumerated() where !dead.contains(index) { link.send(.round(round)) }
            // The instance told to crash never finishes its round: it says when it holds its turn (or
            // answers, if its store refreshed without one).
            let crashing = action == .crash || action == .stall
            let heard = await serve(links, server: server, dead: dead) {
                $0.done.contains(round.index) || $0.inTurn || (crashing && !$0.answers.isEmpty)
            }
            return accept(
                heard, links: links, phase: context, directory: directory, secrets: &secrets, outcome: &outcome)
                ? heard : nil
        }
        let everyone = Array(0..<holders)
        for event in 0..<scenario.rounds {
            let context = "event \(event)"
            let alone = (event / 4) % holders
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
            let eventStarted = ContinuousClock.now
            let atEvent = CrowdingSample(links)
            guard let heard = await run(kind, holders, advance: advance, context: context) else { return false }
            let crowded = crowded(since: eventStarted, from: atEvent, links: links, dead: dead)
            for answer in heard.flatMap(\.answers) {
                outcome.latencies.record(kind == .expiry ? .refreshWait : .rejection, nanoseconds: answer.nanoseconds)
                if let generation = try? answer.result.get() { handed.insert(generation) }
            }
            record(
                Event(
                    index: event, expiry: kind == .expiry, holders: holders.count, issuedBefore: issuedBefore,
                    held: held),
                heard: heard, ledger: server.ledger.entries, crowded: crowded, history: &history, outcome: &outcome)
            recordStorage(after: "event \(event)", in: directory, handed: handed, history: &history, outcome: &outcome)
            // The driver could not read the storage (a database out of reach): nothing more to judge.
            guard outcome.failure == nil else { return false }
            // A database keeps the session on the server, not in files: nothing here to scan.
            guard !backend.isServer else { continue }
            var seen = atRest ?? AtRestScan()
            seen.merge(AtRestScan.scan(directory, secrets: secrets.byKind))
            atRest = seen
        }
        if scenario.kind == .replicas {
            // Reads, which must never reach the database: first every replica gets a fresh token
            // (the one left out of the last expiry takes the new grant from storage), then reads.
            guard await run(.hold, everyone, context: "reads") != nil,
                let reads = await run(.reads, everyone, context: "reads")
            else { return false }
            outcome.persistence?.readsChecked += reads.reduce(0) { $0 + $1.reads }
            outcome.persistence?.storageCallsDuringReads += reads.reduce(0) { $0 + $1.readStorageCalls }
            // The last replica dies holding its turn; the others' next expiry must not wait on it
            // past the lock's timeout.
            let victim = processes - 1
            guard
                let crash = await run(
                    .crash, [victim * instancesPerProcess], advance: scenario.tokenLifetime + .seconds(1),
                    context: "crash")
            else { return false }
            links[victim].kill()
            let killed = ContinuousClock.now
            // What the kernel counts of the survivors and of this process from the kill on: a
            // recovery slowed by a machine that kept them from the CPUs is not the lock's.
            let atKill = CrowdingSample(links)
            dead.insert(victim)
            _ = await links[victim].wait()
            let survivors = everyone.filter { $0 / instancesPerProcess != victim }
            let issuedBefore = server.ledger.entries.compactMap(\.issuedGeneration).max() ?? 0
            guard let heard = await run(.expiry, survivors, context: "event \(scenario.rounds)") else { return false }
            recordRecovery(
                Event(
                    index: scenario.rounds, expiry: true, holders: survivors.count, issuedBefore: issuedBefore,
                    held: [:]),
                heard: heard, ledger: server.ledger.entries, seconds: (ContinuousClock.now - killed).secondsValue,
                killedInTurn: crash[victim].inTurn,
                crowded: Self.crowded(since: killed, from: atKill, links: links, leaving: victim, dead: dead),
                handed: &handed, history: &history, outcome: &outcome)
            recordStorage(
                after: "the lock holder's crash", in: directory, handed: handed, history: &history, outcome: &outcome)
            // The driver could not read the storage (a database out of reach): nothing more to judge.
            guard outcome.failure == nil else { return false }
            // A replica stalls holding the lock, its refresh token read; the others wait past the
            // lock's timeout, then it goes on. Still one refresh for the expiry.
            if survivors.count >= 2, let stalled = survivors.last {
                let context = "event \(scenario.rounds + 1)"
                let others = Array(survivors.dropLast())
                let issuedBefore = server.ledger.entries.compactMap(\.issuedGeneration).max() ?? 0
                guard
                    let stall = await run(
                        .stall, [stalled], advance: scenario.tokenLifetime + .seconds(1), context: context)
                else { return false }
                let stalledProcess = stalled / instancesPerProcess
                var phases: [[Heard]] = []
                var waitedSeconds: Double?
                var crowded = false
                if stall[stalledProcess].inTurn {
                    let waited = ContinuousClock.now
                    let atStall = CrowdingSample(links)
                    guard let during = await run(.expiry, others, context: context) else { return false }
                    // The longest any one caller waited, as its own process timed it: a replica that
                    // heard of the expiry late starts its lock wait late, and that lateness is the
                    // machine's, not the lock's.
                    let seconds = Double(during.flatMap(\.answers).map(\.nanoseconds).max() ?? 0) / 1e9
                    crowded = Self.crowded(
                        since: waited, from: atStall, links: links, leaving: stalledProcess, dead: dead)
                    guard let released = await run(.release, [stalled], context: context),
                        let after = await run(.expiry, others, context: context)
                    else { return false }
                    phases = [during, stall + released, after]
                    outcome.persistence?.stalledHolderWaitSeconds = seconds
                    waitedSeconds = seconds
                } else {
                    // Its store answered without reading the storage in a turn (a session already
                    // over): nothing to stall. The expiry is judged as any other.
                    guard let after = await run(.expiry, others, context: context) else { return false }
                    phases = [[], stall, after]
                }
                recordStall(
                    index: scenario.rounds + 1, issuedBefore: issuedBefore, during: phases[0], holder: phases[1],
                    after: phases[2], waited: waitedSeconds, crowded: crowded, ledger: server.ledger.entries,
                    handed: &handed, history: &history, outcome: &outcome)
                recordStorage(
                    after: "the stalled lock holder's refresh", in: directory, handed: handed, history: &history,
                    outcome: &outcome)
                // The driver could not read the storage (a database out of reach): nothing more to judge.
                guard outcome.failure == nil else { return false }
            }
        }
        // One instance signs out; the others' next refresh must find the shared session over.
        guard await run(.signOut, [0], context: "sign-out") != nil else { return false }
        let others = Array(1..<holders).filter { !dead.contains($0 / instancesPerProcess) }
        guard await run(.hold, others, context: "after sign-out") != nil,
            let after = await run(.storm, others, context: "after sign-out")
        else { return false }
        recordAfterSignOut(after, in: directory, ledger: server.ledger.entries, history: &history, outcome: &outcome)
        let ended = AtRestScan.scan(directory, secrets: ["the signed-out session's refresh token": secrets.session])
        if !backend.isServer, ended.holdsPlaintext {
            history.observations.append(.signedOutOnDisk(exposures: ended.exposures))
        }
        return true
    }
}
