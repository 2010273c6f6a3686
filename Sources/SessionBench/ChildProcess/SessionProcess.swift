import SessionContract
import SessionOracle
import SessionStorage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The process a `crash-restart` round runs and kills: one store over the run's storage, its
/// token endpoint a pipe to the driver (which holds the server and its ledger).
///
/// One round: the store is made (restoring what the storage holds), signs in if the plan says
/// so, hands out a first token, then a 401 storm of the plan's callers forces one refresh,
/// whose save the storage may turn into a crash; then a read phase counts storage calls
/// (there must be none), a sign-out if the round has one, and `done`. Each step is reported to
/// the driver as it happens, so what callers were handed is known even when the process dies.
public enum SessionProcess {
    /// Runs the session process; `store` resolves the plan's store name. Never returns: the
    /// driver kills the process, or closes its standard input for a clean exit.
    /// `network` reaches a token server the driver serves at a URL (`replicas`, when the plan
    /// names one).
    public static func main(
        store resolve: @Sendable (String) -> StoreDescriptor?, network: (any NetworkTransport)? = nil
    ) async -> Never {
        var noCore = rlimit(rlim_cur: 0, rlim_max: 0)
        setrlimit(Int32(RLIMIT_CORE.rawValue), &noCore)
        let pipe = SessionPipe()
        pipe.start()
        let plan = await pipe.plan()
        guard let descriptor = resolve(plan.store) else { fail(pipe, "unknown store '\(plan.store)'") }
        guard let backend = StorageBackendCatalog.named(plan.backend) else {
            fail(pipe, "unknown storage backend '\(plan.backend)'")
        }
        if plan.instances > 0 {
            var endpoint: any TokenEndpoint = PipeEndpoint(pipe: pipe)
            if let url = plan.serverURL {
                guard let network else { fail(pipe, "the plan names a token server at a URL, but this build has no HTTP") }
                endpoint = network.endpoint(url: url)
            }
            await runShared(plan, descriptor: descriptor, backend: backend, endpoint: endpoint, pipe: pipe)
        }
        let opened: any TokenStorage
        do { opened = try backend.make(directory: plan.directory) } catch { fail(pipe, error) }
        let storage = CrashingStorage(wrapping: opened, pipe: pipe, crash: plan.crash, midSaveLimit: plan.midSaveLimit)
        let store = descriptor.make(
            SessionStoreConfiguration(endpoint: PipeEndpoint(pipe: pipe), clock: .system, storage: storage))
        await runRound(plan, store: store, storage: storage, pipe: pipe)
        // Give a store time to act on an answer that arrived late (a refresh discarded by the
        // sign-out): whatever it writes now is what the next process finds.
        while pipe.outstanding > 0 { sleepThread(milliseconds: 1) }
        storage.settle()
        pipe.send(.done)
        while true { sleepThread(milliseconds: 1000) }
    }

    private static func runRound(
        _ plan: SessionProcessPlan, store: any SessionStore, storage: CrashingStorage, pipe: SessionPipe
    ) async {
        if plan.signIn {
            do throws(SessionError) { try await store.signIn(Credentials(subject: Subject(plan.subject))) } catch {
                pipe.send(.first(.failure(error)))
                return
            }
        }
        let first = await outcome { () async throws(SessionError) in try await store.validToken() }
        pipe.send(.first(first.map(\.generation)))
        guard case .success(let token) = first else { return }

        storage.arm(above: token.generation)
        let sentBefore = pipe.refreshesSent
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<plan.callers {
                group.addTask {
                    let got = await outcome { () async throws(SessionError) in try await store.tokenRejected(token) }
                    pipe.send(.got(got.map(\.generation)))
                }
            }
            if plan.crash == .signOutDuringRefresh {
                group.addTask {
                    // Sign out once the refresh is on its way (the driver holds its answer until
                    // then), or after a second if the store never sends one.
                    let deadline = ContinuousClock.now + .seconds(1)
                    while pipe.refreshesSent == sentBefore, ContinuousClock.now < deadline {
                        try? await Task.sleep(for: .milliseconds(1))
                    }
                    await store.signOut()
                    pipe.send(.signedOut)
                }
            }
        }
        guard !plan.crash.signsOut else {
            if plan.crash == .afterSignOut {
                await store.signOut()
                pipe.send(.signedOut)
            }
            return
        }
        let before = storage.callCount
        let reads = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<plan.callers {
                group.addTask {
                    var served = 0
                    for _ in 0..<plan.readsPerCaller {
                        if (try? await store.validToken()) != nil { served += 1 }
                    }
                    return served
                }
            }
            return await group.reduce(0, +)
        }
        pipe.send(.reads(count: reads, storageCalls: storage.callCount - before))
    }

    static func outcome(
        _ call: () async throws(SessionError) -> AccessToken
    ) async -> Result<AccessToken, SessionError> {
        do throws(SessionError) { return .success(try await call()) } catch { return .failure(error) }
    }

    static func fail(_ pipe: SessionPipe, _ why: String) -> Never {
        pipe.send(.problem(why))
        exit(2)
    }

    /// Ends the process because its storage could not be made: the driver hears why, and whether
    /// the storage's server was out of reach or its disk could not be written (the run's problem,
    /// not the store's).
    static func fail(_ pipe: SessionPipe, _ error: StorageError) -> Never {
        switch error {
        case .unreachable(let why): pipe.send(.unreachable(why))
        case .writeFailed: pipe.send(.storageFailed(error.description))
        case .unreadable: fail(pipe, error.description)
        }
        exit(2)
    }
}
