import Dispatch
import Foundation
import SessionContract
import SessionStores
import SessionSync
import Testing

/// The broadcaster under a subscriber that goes away while changes are published.
@Suite("State broadcaster")
struct StateBroadcasterTests {
    @Test("a subscriber cancelled while a change is published deadlocks neither side, and later changes still reach the others")
    func cancelledDuringPublish() async throws {
        // The publisher and the canceller are threads of their own, not the cooperative pool: a
        // deadlock leaves them stuck and the test fails at the deadline instead of hanging.
        let done = CompletionLatch<Int>(expected: 1)
        let rounds = 2_000
        let driver = Thread {
            done.enter()
            var delivered = 0
            for _ in 0..<rounds {
                let broadcaster = StateBroadcaster()
                let stream = broadcaster.subscribe()
                let staying = broadcaster.subscribe()
                let leaving = Task { for await _ in stream {} }
                let reached = DispatchSemaphore(value: 0)
                let other = Task {
                    for await state in staying where state == .signedIn(generation: 16) {
                        reached.signal()
                        break
                    }
                }
                let published = DispatchSemaphore(value: 0)
                Thread {
                    for version in 1...16 {
                        broadcaster.publish(.signedIn(generation: UInt64(version)), version: UInt64(version))
                    }
                    published.signal()
                }.start()
                leaving.cancel()
                published.wait()
                // The other subscriber still hears the last change. It listens on the cooperative
                // pool, which the suites beside this one can fill for half a minute at a time
                // (under ThreadSanitizer, at the start of a run): waited for patiently.
                if reached.wait(timeout: .now() + 120) == .success { delivered += 1 }
                other.cancel()
            }
            done.finish(delivered)
        }
        driver.start()
        let delivered = await done.wait(until: .now + .seconds(600))
        #expect(delivered == [rounds], "a publish and a cancelled subscriber deadlocked (rounds done: \(done.partialResults))")
    }
}
