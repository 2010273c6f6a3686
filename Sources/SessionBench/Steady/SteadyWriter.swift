import Histogram
import SessionContract
import SessionMeasurement
import SessionOracle
import SessionSync
import Synchronization
import TokenServer

/// `writes-under-reads`: one writer reports a 401 for the token it holds at a fixed rate while
/// every reader reads — how long a write waits behind a read storm (a reader-preferring lock, a
/// barrier queue draining its readers, an actor's mailbox), and what the readers keep doing.
///
/// The writer is a task of its own. At once, then at each tick of ``interval``, it calls `tokenRejected(_:)`
/// with the token its previous write got (a 401 for the current token: a refresh every time),
/// timed from the call to its return; a tick it is too late for is skipped and counted, never
/// made up in a burst. A write's error is kept to be judged like a reader's.
final class SteadyWriter: Sendable {
    struct Tally: Sendable {
        var latency = LatencyRecorder.emptyHistogram()
        var writes: UInt64 = 0
        /// Ticks that passed while a write was still under way.
        var skippedTicks: UInt64 = 0
        var errors: [ObservedCall] = []
    }

    private final class Flag: Sendable {
        let raised = Atomic<Bool>(false)
    }

    private let stopped = Flag()
    /// The writer's tally, once it has stopped.
    private let done = CompletionLatch<Tally>(expected: 1)
    let phase: String

    /// Starts writing to `store` every `interval`, from a first token read with `validToken()`.
    init(_ store: any SessionStore, every interval: Duration, caller: Int, phase: String) {
        let stopped = self.stopped
        let done = self.done
        self.phase = phase
        Task {
            var tally = Tally()
            let clock = ContinuousClock()
            var held = try? await store.validToken()
            var next = clock.now
            var first = true
            while !stopped.raised.load(ordering: .relaxed) {
                // The first write at once: a busy machine that gives the writer one late turn
                // in a short phase still gets a write measured.
                if !first {
                    next = next.advanced(by: interval)
                    let now = clock.now
                    if next < now {
                        let behind = UInt64(((now - next) / interval).rounded(.down)) + 1
                        tally.skippedTicks += behind
                        next = next.advanced(by: interval * Double(behind))
                    }
                    try? await clock.sleep(until: next)
                    if stopped.raised.load(ordering: .relaxed) { break }
                }
                first = false
                guard let token = held else {
                    held = try? await store.validToken()
                    continue
                }
                let started = TokenServer.realNanoseconds()
                do throws(SessionError) {
                    held = try await store.tokenRejected(token)
                    tally.writes += 1
                    _ = tally.latency.record(UInt64(max(1, TokenServer.realNanoseconds() - started)))
                } catch {
                    held = nil
                    if tally.errors.count < SteadyDriver.keptErrors {
                        tally.errors.append(
                            ObservedCall(
                                caller: caller, account: 0, kind: .rejection, request: .tokenRejected(generation: token.generation),
                                phase: phase, startedAt: TokenInstant(nanoseconds: 0), startedNanos: started,
                                endedNanos: TokenServer.realNanoseconds(), answer: .error(error), wasCancelled: false))
                    }
                }
            }
            done.finish(tally)
        }
    }

    /// Stops writing and returns the tally, once the write under way (if any) has returned;
    /// `nil` if it has not within `hangTimeout` (waited longer on a machine too busy to run it).
    func finish(hangTimeout: Duration) async -> Tally? {
        stopped.raised.store(true, ordering: .relaxed)
        let done = self.done
        let results = await PatientWait.wait(until: .now + hangTimeout, hangTimeout: hangTimeout) {
            await done.wait(until: $0)
        }
        return (results ?? done.partialResults).first
    }

    /// The hang of a writer whose write never returned.
    func hang(after hangTimeout: Duration) -> ScenarioResult.Hang {
        ScenarioResult.Hang(
            stuckCallers: 1, ofCallers: 1, operation: .rejection, waitedSeconds: hangTimeout.secondsValue, phase: phase,
            detail: "the writer's tokenRejected(_:) had not returned when the reads were done")
    }
}
