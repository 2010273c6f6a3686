import SessionContract
import SessionOracle
import SessionStorage

/// A `shared-storage` process: several instances of one store over one storage folder (each with
/// a storage object of its own, as separate parts of an app would have), shared with the other
/// processes of the run. Its clock is the driver's manual clock, so tokens expire exactly when
/// the driver says. Each step (``SharedRound``) ends with `roundDone`.
extension SessionProcess {
    static func runShared(
        _ plan: SessionProcessPlan, descriptor: StoreDescriptor, backend: StorageBackend, endpoint: any TokenEndpoint,
        pipe: SessionPipe
    ) async -> Never {
        let time = ManualTime(start: TokenInstant(nanoseconds: plan.clockStart))
        var stores: [any SessionStore] = []
        var storages: [CrashingStorage] = []
        for _ in 0..<plan.instances {
            let opened: any TokenStorage
            do { opened = try backend.make(directory: plan.directory) } catch { fail(pipe, error) }
            // Counts and times saves; never crashes.
            let storage = CrashingStorage(wrapping: opened, pipe: pipe, crash: .clean, midSaveLimit: 0)
            storages.append(storage)
            stores.append(
                descriptor.make(
                    SessionStoreConfiguration(
                        endpoint: endpoint, clock: .manual(time), storage: storage)))
        }
        // Each instance restores the session the driver saved.
        for store in stores {
            let first = await outcome { () async throws(SessionError) in try await store.validToken() }
            pipe.send(.first(first.map(\.generation)))
        }
        var held: [AccessToken?] = Array(repeating: nil, count: stores.count)
        var overheadsSent = 0
        var stalled: [Task<Void, Never>] = []
        while true {
            let round = await pipe.nextRound()
            time.advance(by: .nanoseconds(round.advance))
            let mine = stores.indices.filter { round.holders.contains(plan.incarnation * plan.instances + $0) }
            switch round.action {
            case .hold:
                for instance in mine {
                    let started = ContinuousClock.now
                    let got = await outcome { () async throws(SessionError) in try await stores[instance].validToken() }
                    held[instance] = try? got.get()
                    let elapsed = (ContinuousClock.now - started).nanosecondsClamped
                    pipe.send(.answered(instance: instance, got.map(\.generation), nanoseconds: elapsed))
                }
            case .storm, .expiry:
                await storm(round, stores: stores, instances: mine, held: held, callers: plan.callers, pipe: pipe)
            case .signOut:
                for instance in mine { await stores[instance].signOut() }
                pipe.send(.signedOut)
            case .reads:
                let before = storages.reduce(0) { $0 + $1.callCount }
                let count = await reads(stores: mine.map { stores[$0] }, callers: plan.callers, each: plan.readsPerCaller)
                pipe.send(.reads(count: count, storageCalls: storages.reduce(0) { $0 + $1.callCount } - before))
            case .crash, .stall:
                // `crash`: the instance's next turn to refresh is its last: it says so and waits
                // there, holding whatever the turn holds, until the driver kills the process.
                // `stall`: it reads the storage in its turn, says so and waits there, lock held and
                // the refresh token it will present in hand, until `release`.
                for instance in mine {
                    if round.action == .crash {
                        storages[instance].parkInNextTurn()
                    } else {
                        storages[instance].parkAfterNextReload()
                    }
                    stalled.append(
                        Task { [store = stores[instance]] in
                            let started = ContinuousClock.now
                            let got = await outcome { () async throws(SessionError) in try await store.validToken() }
                            // After a crash, only a store that refreshed outside its turn gets here.
                            let elapsed = (ContinuousClock.now - started).nanosecondsClamped
                            pipe.send(.answered(instance: instance, got.map(\.generation), nanoseconds: elapsed))
                        })
                }
                if !mine.isEmpty { continue }
            case .release:
                for storage in storages { storage.release() }
                for task in stalled { await task.value }
                stalled = []
            }
            if let measured = endpoint as? any TransportEndpoint {
                let overheads = measured.refreshOverheads()
                if overheads.count > overheadsSent { pipe.send(.overheads(Array(overheads[overheadsSent...]))) }
                overheadsSent = overheads.count
            }
            pipe.send(.roundDone(round.index))
        }
    }

    /// `each` reads by each of `callers` callers of every store in `stores`, all at once; returns how
    /// many got a token.
    private static func reads(stores: [any SessionStore], callers: Int, each: Int) async -> Int {
        await withTaskGroup(of: Int.self) { group in
            for store in stores {
                for _ in 0..<callers {
                    group.addTask {
                        var served = 0
                        for _ in 0..<each where (try? await store.validToken()) != nil { served += 1 }
                        return served
                    }
                }
            }
            return await group.reduce(0, +)
        }
    }

    /// Every caller of the named instances at once: a 401 for the token the instance holds, or
    /// (an expiry) a plain `validToken()`.
    private static func storm(
        _ round: SharedRound, stores: [any SessionStore], instances: [Int], held: [AccessToken?], callers: Int,
        pipe: SessionPipe
    ) async {
        await withTaskGroup(of: Void.self) { group in
            for instance in instances {
                let store = stores[instance]
                let token = round.action == .storm ? held[instance] : nil
                for _ in 0..<callers {
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
