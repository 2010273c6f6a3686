import Foundation
import SessionContract
import SessionStorage
import TokenServer

/// Runs `shared-storage`: one saved session, one storage folder, and two session processes with
/// two instances of the store each, every instance over a storage object of its own on that
/// folder — an app and its extension over one Keychain item, or two workers over one file.
///
/// The driver signs in, saves the grant with the backend's own code, and starts the processes;
/// every instance restores the session. Then rounds, alternately a 401 storm (every caller of
/// every instance reports a 401 for the token its instance holds) and an expiry (the shared
/// manual clock moves past the token's lifetime, then every caller asks for a token). Each
/// round needs one new token for the whole session, so the server's ledger must show exactly one
/// refresh call per round across all four instances and both processes, every caller must get
/// that round's token, and no refresh token may be presented twice (the server would revoke the
/// session: with rotation, a holder that refreshes on its own logs every other one out).
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
                links, server: server, time: time, saved: grant, handed: &handed, secrets: &secrets,
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
        CrashRestartDriver.judgeAtRest(
            AtRestScan.scan(directory, secrets: secrets.byKind), backend: backend, oracle: oracle, outcome: &outcome)
    }

    /// The launch and the rounds. Returns `false` when the run had to stop (a hang, a process
    /// that could not run or ended).
    private func drive(
        _ links: [SessionProcessLink], server: TokenServer, time: ManualTime, saved grant: TokenGrant,
        handed: inout Set<UInt64>, secrets: inout Secrets, outcome: inout DriverOutcome
    ) async -> Bool {
        let launch = await serve(links, server: server, until: { $0.firsts.count == Self.instancesPerProcess })
        guard accept(launch, links: links, phase: "launch", secrets: &secrets, outcome: &outcome) else { return false }
        for (index, heard) in launch.enumerated() {
            for first in heard.firsts where first != .success(grant.accessToken.generation) {
                oracle.report(
                    .durableRotation,
                    "a store instance in process \(index) restored the saved session (generation "
                        + "\(grant.accessToken.generation)) but its first call got \(Self.describe(first))")
            }
        }
        var current = grant.accessToken.generation
        for round in 0..<scenario.rounds {
            let expiry = round % 2 == 1
            let advance = expiry ? scenario.tokenLifetime + .seconds(1) : .zero
            time.advance(by: advance)
            server.setContext("round \(round)")
            for link in links {
                link.send(.round(SharedRound(index: round, expiry: expiry, advance: advance.nanosecondsClamped)))
            }
            let heard = await serve(links, server: server) {
                $0.answers.count == Self.instancesPerProcess * scenario.tasks
            }
            guard accept(heard, links: links, phase: "round \(round)", secrets: &secrets, outcome: &outcome) else {
                return false
            }
            for answer in heard.flatMap(\.answers) {
                outcome.latencies.record(expiry ? .refreshWait : .rejection, nanoseconds: answer.nanoseconds)
                if let generation = try? answer.result.get() { handed.insert(generation) }
            }
            current = judge(
                round: round, expiry: expiry, heard: heard, after: current, ledger: server.ledger.entries,
                outcome: &outcome)
        }
        return true
    }

    /// I1, I4, I6, I12, I13 for one round: exactly one refresh call across every holder, and
    /// every caller handed that refresh's token. Returns the session's generation after it.
    private func judge(
        round: Int, expiry: Bool, heard: [Heard], after previous: UInt64, ledger: [LedgerEntry],
        outcome: inout DriverOutcome
    ) -> UInt64 {
        let event = expiry ? "expiry" : "401 storm"
        let context = "round \(round), \(expiry ? "an" : "a") \(event) over \(Self.processes) processes × \(Self.instancesPerProcess) "
            + "stores sharing one \(backend.name) storage"
        let refreshes = ledger.filter { $0.context == "round \(round)" && $0.call == .refresh }
        let issued = refreshes.compactMap(\.issuedGeneration).max()
        // Once the server has refused a refresh token the session is over for every holder: the
        // reuse behind it is I7's, and callers told so are right.
        let refused = ledger.contains { $0.call == .refresh && $0.isInvalidGrant }
        if refreshes.count > 1 {
            oracle.report(
                .singleFlight, "\(refreshes.count) refresh calls for one \(event) (\(context))",
                trace: refreshes.prefix(3).map(Oracle.describe))
        }
        let answers = heard.flatMap(\.answers)
        let newest = issued ?? previous
        let stale = answers.filter { (try? $0.result.get()).map { $0 < newest || $0 <= previous } ?? false }
        if let first = stale.first, let generation = try? first.result.get() {
            let what =
                issued == nil
                ? "no holder refreshed, and \(stale.count) caller(s) got generation \(generation) back"
                : "\(stale.count) caller(s) got generation \(generation), older than generation \(newest) "
                    + "issued in this round"
            oracle.report(
                expiry ? .fresh : .staleRejectionDoesNotRefresh,
                "\(what): \(expiry ? "a token that had expired" : "the token their 401 was for") (\(context))",
                trace: ["first seen at \(first.instance)"])
        }
        for failure in answers.compactMap({ answer -> (String, SessionError)? in
            guard case .failure(let error) = answer.result else { return nil }
            return (answer.instance, error)
        }).prefix(1) where !refused {
            let count = answers.filter { (try? $0.result.get()) == nil }.count
            let ends = failure.1 == .refreshTokenRevoked || failure.1 == .signedOut
            oracle.report(
                ends ? .sessionKept : .served,
                "\(count) caller(s) got \(failure.1) though the server refused nothing (\(context))",
                trace: ["first seen at \(failure.0)"])
        }
        outcome.refreshCalls += refreshes.count
        outcome.stormRefreshCalls += refreshes.count
        outcome.storms += 1
        outcome.stormCallers += answers.count
        outcome.operations += UInt64(answers.filter { (try? $0.result.get()) != nil }.count)
        outcome.failedCalls += UInt64(answers.filter { (try? $0.result.get()) == nil }.count)
        outcome.persistence?.grantsTaken += max(0, Self.holders - refreshes.count)
        return newest
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
                let expected = phase == "launch" ? Self.instancesPerProcess : Self.instancesPerProcess * scenario.tasks
                let got = phase == "launch" ? part.firsts.count : part.answers.count
                outcome.hang = .init(
                    stuckCallers: max(0, expected - got), ofCallers: expected,
                    operation: phase == "launch" ? .read : .rejection,
                    waitedSeconds: runner.hangTimeout.secondsValue, phase: "session process \(index), \(phase)",
                    detail: "no word from session process \(index) for the hang timeout (\(phase))")
            case .closed:
                outcome.failure = "session process \(index) ended during \(phase)"
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
                                link.send(Self.reply(id, result))
                            case .signInRequest(let id, let user):
                                let result = await server.signInResult(Credentials(subject: Subject(user)))
                                if case .success(let grant) = result { heard.grants.append(grant) }
                                link.send(Self.reply(id, result))
                            case .first(let first): heard.firsts.append(first)
                            case .answered(let instance, let result, let nanoseconds):
                                heard.answers.append(("process \(index), store instance \(instance)", result, nanoseconds))
                            case .saved(let nanoseconds): heard.saves.append(nanoseconds)
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

    private static func reply(_ id: Int, _ result: Result<TokenGrant, TokenEndpointError>) -> SessionLine {
        switch result {
        case .success(let grant): .grant(id: id, grant)
        case .failure(let error): .failure(id: id, error)
        }
    }

    private static func describe(_ result: Result<UInt64, SessionError>) -> String {
        switch result {
        case .success(let generation): "generation \(generation)"
        case .failure(let error): "\(error)"
        }
    }
}
