import Foundation
import SessionContract
import SessionMeasurement
import SessionOracle
import SessionSync
import Synchronization
import TokenServer

/// Launching callers in waves, waiting for them under the watchdog, and recording what they got.
extension RoundDriver {
    /// What caller `caller` of `account` asks the store.
    typealias Plan = @Sendable (_ account: Int, _ caller: Int) -> StoreCall

    /// Callers started together: caller `i` works on account `i % accounts`.
    struct Wave {
        let latch: CompletionLatch<ObservedCall>
        let tasks: [Task<Void, Never>]
        let callers: Range<Int>
        let kind: OperationKind
        let phase: String
        let cancel: Set<Int>

        var count: Int { callers.count }
    }

    /// Starts the callers in `callers`, released together from one start line. `plan` says what
    /// each one asks the store.
    func launch(
        _ callers: Range<Int>, kind: OperationKind, kindOf: (@Sendable (Int) -> OperationKind)? = nil, phase: String,
        cancel: Set<Int> = [], on others: [any SessionStore]? = nil, plan: @escaping Plan
    ) -> Wave {
        let line = StartLine(count: callers.count)
        let latch = CompletionLatch<ObservedCall>(expected: callers.count)
        let stores = others ?? self.stores
        let subjects = self.subjects
        let clock = TokenClock.manual(time)
        let tasks = callers.map { caller in
            Task {
                let account = caller % stores.count
                await line.arriveAndWait()
                latch.enter()
                // Only the request and its start live across the store's call, and `validToken()`,
                // the storms' call, is made from this frame: a parked caller's task then holds the
                // store's frames and few of the harness's, so the scale storm weighs the store
                // (a task's frames that outgrow its first slab cost an allocation and a kilobyte).
                let request = plan(account, caller)
                let started = StoreCall.Started(clock: clock)
                let result: Result<AccessToken?, SessionError>
                if case .validToken = request {
                    do throws(SessionError) { result = .success(try await stores[account].validToken()) } catch {
                        result = .failure(error)
                    }
                } else {
                    result = await request.call(on: stores[account])
                }
                request.finish(
                    into: latch, result, started: started, caller: caller, account: account,
                    kind: kindOf?(caller) ?? kind, phase: phase, clock: clock, subjects: subjects,
                    cancelled: cancel.contains(caller))
            }
        }
        return Wave(latch: latch, tasks: tasks, callers: callers, kind: kind, phase: phase, cancel: cancel)
    }

    /// Holds the server's refreshes, starts `callers`, and waits until they are all in, the
    /// refreshes they started (one per account, if they start any) are held at the server,
    /// and the callers have settled. `nil` (and a hang) when they could not start.
    mutating func heldWave(
        _ callers: Range<Int>, kind: OperationKind, kindOf: (@Sendable (Int) -> OperationKind)? = nil, phase: String,
        cancel: Set<Int> = [], expectedRefreshes: Int? = nil, plan: @escaping Plan
    ) async -> Wave? {
        server.gate.hold()
        let arrivals = server.gate.arrivals
        let wave = launch(callers, kind: kind, kindOf: kindOf, phase: phase, cancel: cancel, plan: plan)
        guard await entered(wave) else { return nil }
        await refreshesReachGate(expectedRefreshes ?? stores.count, since: arrivals)
        await settle()
        return wave
    }

    /// Waits until every caller of `wave` is about to call the store; a hang otherwise.
    mutating func entered(_ wave: Wave) async -> Bool {
        guard wave.count > 0 else { return true }
        let deadline = ContinuousClock.now + runner.hangTimeout
        expectBack(by: deadline, wave, phase: "\(wave.phase): start")
        // A machine too busy to start the callers is not a store that keeps them out.
        let entered =
            await PatientWait.wait(
                until: deadline, hangTimeout: runner.hangTimeout,
                extended: { expectBack(by: $0, wave, phase: "\(wave.phase): start") }
            ) { await wave.latch.waitForEntry(until: $0) ? true : nil } ?? false
        watch.back()
        // The last caller coming in at the deadline itself is not a hang.
        guard entered || wave.latch.enteredCount == wave.count else {
            server.gate.release()
            outcome.hang = .init(
                stuckCallers: wave.count - wave.latch.enteredCount, ofCallers: wave.count, operation: wave.kind,
                waitedSeconds: runner.hangTimeout.secondsValue, phase: "\(wave.phase): start",
                detail: "callers could not even start: the cooperative pool is busy or blocked")
            return false
        }
        return true
    }

    /// Gives the held refreshes a moment to reach the gate: `expected` arrivals beyond
    /// `arrivalsBefore`. A store that does not refresh is not waited for: once the process has
    /// stopped using CPU, nothing more is on its way.
    mutating func refreshesReachGate(_ expected: Int, since arrivalsBefore: Int) async {
        let gate = server.gate
        let deadline = ContinuousClock.now + .milliseconds(200)
        var cpu = ResourceUsage.cpuSeconds
        var idle = 0
        while gate.arrivals < arrivalsBefore + expected, ContinuousClock.now < deadline {
            await pause(.microseconds(500))
            let now = ResourceUsage.cpuSeconds
            idle = now - cpu < 0.000_1 ? idle + 1 : 0
            cpu = now
            if idle >= 4 { return }  // 2 ms with the process at rest
        }
    }

    /// Waits (briefly) until every refresh the server has received is answered, so a refresh
    /// whose callers all left early — every one cancelled — still counts in its own round.
    mutating func refreshesAnswered() async {
        let deadline = ContinuousClock.now + .milliseconds(200)
        while server.gate.waitingCount > 0
            || server.ledger.entries.contains(where: { $0.call == .refresh && $0.respondedAt == nil }),
            ContinuousClock.now < deadline
        {
            await pause(.microseconds(200))
        }
    }

    /// Lets the callers that are in reach the point where they wait: until this process
    /// stops using CPU (every caller parked, the machine quiet), a short bounded while.
    mutating func settle() async {
        await pause(runner.settle)
        let deadline = ContinuousClock.now + .milliseconds(25)
        var before = ResourceUsage.cpuSeconds
        while ContinuousClock.now < deadline {
            await pause(.microseconds(500))
            let now = ResourceUsage.cpuSeconds
            if now - before < 0.000_1 { return }  // under 0.1 ms of CPU in 0.5 ms: parked
            before = now
        }
    }

    /// Sleeps for `duration`, with the watchdog told when to expect the coordinator back.
    mutating func pause(_ duration: Duration) async {
        let phase = server.ledger.entries.last?.context ?? ""
        watch.expectBack(by: .now + duration) {
            Starvation(
                phase: phase, stuckCallers: 0, ofCallers: 0, operation: .refreshWait,
                detail:
                    "the harness could not run at all: every thread of the cooperative pool is blocked (a lock or semaphore held across an await?)"
            )
        }
        try? await Task.sleep(for: duration)
        watch.back()
    }

    /// Collects every caller of `waves` (releasing nothing), or records a hang.
    mutating func collect(_ waves: [Wave], phase: String) async -> [ObservedCall]? {
        var calls: [ObservedCall] = []
        let window = PatientWait.window()
        let deadline = window.start + runner.hangTimeout
        for wave in waves where wave.count > 0 {
            expectBack(by: deadline, wave, phase: phase)
            // A machine too busy to run the callers is not a store that does not return them;
            // every wave's wait is judged from when the deadline was set.
            let results = await PatientWait.wait(
                until: deadline, hangTimeout: runner.hangTimeout, since: window,
                extended: { expectBack(by: $0, wave, phase: phase) }
            ) { await wave.latch.wait(until: $0) }
            watch.back()
            if let results {
                calls += results
                continue
            }
            // The deadline passed; a caller finishing at that very moment is not a hang.
            let late = wave.latch.partialResults
            if late.count == wave.count {
                calls += late
                continue
            }
            outcome.hang = .init(
                stuckCallers: wave.count - late.count, ofCallers: wave.count, operation: wave.kind,
                waitedSeconds: runner.hangTimeout.secondsValue, phase: wave.phase, detail: refreshStatus())
            server.gate.release()
            return nil
        }
        return calls
    }

    /// Tells the watchdog when the coordinator expects to be back from waiting on `wave`.
    func expectBack(by deadline: ContinuousClock.Instant, _ wave: Wave, phase: String) {
        let latch = wave.latch
        let kind = wave.kind
        let server = self.server
        let ledgerStart = max(0, server.ledger.entries.count - 8)
        watch.expectBack(by: deadline) {
            Starvation(
                phase: phase, stuckCallers: latch.expectedCount - latch.finishedCount, ofCallers: latch.expectedCount,
                operation: kind,
                detail: "the harness could not run after the deadline: every thread of the cooperative pool is blocked "
                    + "(a lock or semaphore held across an await?); "
                    + Self.refreshStatus(server: server, since: ledgerStart))
        }
    }

    /// What the server saw of the latest refreshes, for a hang report.
    func refreshStatus() -> String {
        Self.refreshStatus(server: server, since: max(0, server.ledger.entries.count - 8))
    }

    static func refreshStatus(server: TokenServer, since start: Int) -> String {
        let refreshes = server.ledger.entries.dropFirst(start).filter { $0.call == .refresh }
        let held = server.gate.waitingCount
        guard let last = refreshes.last else {
            return held > 0
                ? "\(held) refresh call(s) still held at the server"
                : "no refresh call reached the server in this phase"
        }
        var status = "the latest refresh was " + Oracle.describe(last)
        if let responded = last.respondedAt {
            let ago = Double(TokenServer.realNanoseconds() - responded) / 1e9
            status += String(format: ", answered %.2fs before the report: the store never resumed its callers", ago)
        }
        return status
    }

    /// The callers to cancel among `callers`, drawn from the scenario's seed.
    mutating func chooseCancelled(_ callers: Range<Int>, fraction: Double) -> Set<Int> {
        let wanted = min(callers.count, Int(Double(callers.count) * fraction))
        var chosen = Set<Int>()
        while chosen.count < wanted { chosen.insert(callers.lowerBound + Int(random.next() % UInt64(callers.count))) }
        return chosen
    }
}
