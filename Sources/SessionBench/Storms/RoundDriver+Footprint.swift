import SessionContract
import SessionMeasurement
import SessionOracle
import SessionSync

/// What a waiting caller costs: the scale storm's baseline crowd on bare continuations, and
/// the tally of storm allocations per caller the store's figures are taken from.
extension RoundDriver {
    /// Parks the scale storm's crowd on bare continuations through the same harness path, to
    /// learn what a waiting caller costs before any store is involved: the memory it holds
    /// while parked, and the allocations of its whole call.
    mutating func measureCallerFootprint() async {
        guard let memory, let token = currentToken.first ?? nil else { return }
        let lot = ParkingLot()
        let allocationsBefore = memory.begin()
        defer { _ = memory.end() }
        let before = memory.liveBytes()
        let parking = stores.map { _ in ParkedStore(lot: lot, token: token) }
        let wave = launch(0..<scenario.tasks, kind: .read, phase: "caller footprint", on: parking) { _, _ in
            .validToken
        }
        guard await entered(wave) else { return }
        let deadline = ContinuousClock.now + runner.hangTimeout
        while lot.parked < scenario.tasks, ContinuousClock.now < deadline { await pause(.microseconds(100)) }
        let parked = Double(Int64(memory.liveBytes()) - Int64(before)) / Double(scenario.tasks)
        lot.releaseAll(stayOpen: true)
        guard await wave.latch.wait(until: .now + runner.hangTimeout) != nil else { return }
        outcome.callerBytesPerWaiter = max(0, parked)
        outcome.callerAllocationsPerWaiter = Self.perCaller(
            memory.snapshot(), since: allocationsBefore, callers: scenario.tasks)
    }

    /// Adds one storm's allocations (from `before` until now) and its callers to the tally.
    mutating func countAllocations(since before: AllocationCounter.Snapshot?, callers: Int) {
        guard let before, let memory else { return }
        let now = memory.snapshot()
        outcome.stormAllocations += now.count &- before.count
        outcome.stormAllocationCallers += callers
    }

    static func perCaller(_ now: AllocationCounter.Snapshot, since before: AllocationCounter.Snapshot, callers: Int)
        -> Double?
    {
        guard callers > 0, now.count >= before.count else { return nil }
        return Double(now.count - before.count) / Double(callers)
    }
}

/// A store whose every call parks on a lot until released, then returns one token: the harness's
/// own path for a waiting caller, with no store's work in it.
private final class ParkedStore: SessionStore {
    let lot: ParkingLot
    let token: AccessToken

    init(lot: ParkingLot, token: AccessToken) {
        self.lot = lot
        self.token = token
    }

    func validToken() async throws(SessionError) -> AccessToken {
        await lot.park()
        return token
    }

    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken { try await validToken() }
    func signIn(_ credentials: Credentials) async throws(SessionError) {}
    func signOut() async {}
}
