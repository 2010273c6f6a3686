import SessionContract
import SessionStorage

/// A `shared-storage` process: several instances of one store over one storage folder (each with
/// a storage object of its own, as separate parts of an app would have), shared with the other
/// processes of the run. Its clock is the driver's manual clock, so tokens expire exactly when
/// the driver says.
extension SessionProcess {
    static func runShared(
        _ plan: SessionProcessPlan, descriptor: StoreDescriptor, backend: StorageBackend, pipe: SessionPipe
    ) async -> Never {
        let time = ManualTime(start: TokenInstant(nanoseconds: plan.clockStart))
        var stores: [any SessionStore] = []
        for _ in 0..<plan.instances {
            let opened: any TokenStorage
            do { opened = try backend.make(directory: plan.directory) } catch { fail(pipe, error.description) }
            // Counts and times saves; never crashes.
            let storage = CrashingStorage(wrapping: opened, pipe: pipe, crash: .clean, midSaveLimit: 0)
            stores.append(
                descriptor.make(
                    SessionStoreConfiguration(endpoint: PipeEndpoint(pipe: pipe), clock: .manual(time), storage: storage)))
        }
        // Each instance restores the session the driver saved.
        for store in stores {
            let first = await outcome { () async throws(SessionError) in try await store.validToken() }
            pipe.send(.first(first.map(\.generation)))
        }
        while true {
            let round = await pipe.nextRound()
            time.advance(by: .nanoseconds(round.advance))
            await storm(round, stores: stores, callers: plan.callers, pipe: pipe)
            pipe.send(.roundDone(round.index))
        }
    }

    /// Every instance's callers at once: a 401 for the token the instance holds, or (an expiry
    /// round) a plain `validToken()`.
    private static func storm(_ round: SharedRound, stores: [any SessionStore], callers: Int, pipe: SessionPipe) async {
        var held: [AccessToken?] = []
        if !round.expiry {
            for store in stores { held.append(try? await store.validToken()) }
        }
        await withTaskGroup(of: Void.self) { group in
            for (instance, store) in stores.enumerated() {
                for _ in 0..<callers {
                    let token = round.expiry ? nil : held[instance]
                    group.addTask {
                        let started = ContinuousClock.now
                        let got = await outcome { () async throws(SessionError) in
                            if let token { return try await store.tokenRejected(token) }
                            return try await store.validToken()
                        }
                        let elapsed = (ContinuousClock.now - started).nanosecondsClamped
                        pipe.send(.answered(instance: instance, got.map(\.generation), nanoseconds: elapsed))
                    }
                }
            }
        }
    }
}
