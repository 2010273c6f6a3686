import SessionContract
import SessionMeasurement
import SessionOracle
import SessionSync
import TokenServer

/// How `step-up` starts its clinical requests, waits for them and watches its own calls.
extension StepUpSession {
    /// Until the crowd has parked: the process uses under 0.1 ms of CPU in 0.5 ms (at most 2 s,
    /// for a loaded or sanitized build). A request still on its way when a denied prompt is
    /// answered would rightly prompt again, and count as a second prompt of the burst.
    static func settle() async {
        try? await Task.sleep(for: .milliseconds(2))
        let deadline = ContinuousClock.now + .seconds(2)
        var before = ResourceUsage.cpuSeconds
        while ContinuousClock.now < deadline {
            try? await Task.sleep(for: .microseconds(500))
            let now = ResourceUsage.cpuSeconds
            if now - before < 0.000_1 { return }
            before = now
        }
    }

    /// Two clinical requests whose tasks are cancelled while a prompt is open: one cancelled
    /// before it asks, one after it has parked on the prompt. Each must still return; the prompt
    /// and the other requests go on.
    func launchCancelled() async -> CompletionLatch<Call> {
        let latch = CompletionLatch<Call>(expected: 2)
        let client = clients[0]
        let parked = Task {
            latch.enter()
            do throws(SessionError) {
                latch.finish(.elevated(.success(try await client.elevatedToken())))
            } catch {
                latch.finish(.elevated(.failure(error)))
            }
        }
        Task {
            latch.enter()
            withUnsafeCurrentTask { $0?.cancel() }
            do throws(SessionError) {
                latch.finish(.elevated(.success(try await client.elevatedToken())))
            } catch {
                latch.finish(.elevated(.failure(error)))
            }
        }
        _ = await latch.waitForEntry(until: .now + runner.hangTimeout)
        await Self.settle()
        parked.cancel()
        return latch
    }

    /// `count` concurrent clinical requests, even ones through the kept API objects, odd ones
    /// through API objects made on demand.
    func launch(_ count: Int) -> CompletionLatch<Call> {
        let latch = CompletionLatch<Call>(expected: count)
        for index in 0..<count {
            let client: (any SessionClient)? = index.isMultiple(of: 2) ? clients[(index / 2) % clients.count] : nil
            let store = self.store
            Task {
                latch.enter()
                let api = client ?? store.makeClient()
                do throws(SessionError) {
                    latch.finish(.elevated(.success(try await api.elevatedToken())))
                } catch {
                    latch.finish(.elevated(.failure(error)))
                }
            }
        }
        return latch
    }

    func collect(_ latch: CompletionLatch<Call>, phase: String, outcome: inout DriverOutcome) async -> [Call]? {
        let start = ContinuousClock.now
        if let calls = await latch.patientValues(hangTimeout: runner.hangTimeout) { return calls }
        user.gate.release()
        outcome.hang = .init(
            stuckCallers: latch.expectedCount - latch.finishedCount, ofCallers: latch.expectedCount,
            operation: .refreshWait, waitedSeconds: (ContinuousClock.now - start).secondsValue, phase: phase,
            detail: "clinical requests never returned; prompts shown so far: \(user.prompts.count)")
        return nil
    }

    func watched<T: Sendable>(
        _ phase: String, outcome: inout DriverOutcome, _ body: @escaping @Sendable () async -> T
    ) async -> T? {
        let latch = CompletionLatch<T>(expected: 1)
        Task {
            latch.enter()
            latch.finish(await body())
        }
        let start = ContinuousClock.now
        if let value = await latch.patientValues(hangTimeout: runner.hangTimeout)?.first { return value }
        outcome.hang = .init(
            stuckCallers: 1, ofCallers: 1, operation: .signIn,
            waitedSeconds: (ContinuousClock.now - start).secondsValue,
            phase: phase, detail: "a call of the harness's own never returned")
        return nil
    }
}
