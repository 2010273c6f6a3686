// Probe: with the hook set, every block a store hands to Dispatch through the Swift overlay is
// held here, on the one driver thread, and run when the driver picks it: nothing reaches a
// Dispatch thread. With the hook cleared, Dispatch works as ever.
import CInterpose
import Dispatch
import Foundation

/// A block held for the driver (a class: Swift's tuple metadata does not take a block type here).
final class Held {
    let kind: Int32
    let queue: UnsafeMutableRawPointer?
    let block: sb_block_t
    init(kind: Int32, queue: UnsafeMutableRawPointer?, block: @escaping sb_block_t) {
        (self.kind, self.queue, self.block) = (kind, queue, block)
    }
}
nonisolated(unsafe) var held: [Held] = []
nonisolated(unsafe) var kinds: [Int32: Int] = [:]
let names: [Int32: String] = [
    1: "async", 2: "asyncAfter", 3: "sync", 4: "barrier async", 5: "barrier sync", 6: "group async", 7: "group notify",
]
let driver = pthread_self()
nonisolated(unsafe) var offDriver = 0

func hook(kind: Int32, queue: UnsafeMutableRawPointer?, when: UInt64, block: sb_block_t?) {
    guard let block else { return }
    if pthread_equal(pthread_self(), driver) == 0 { offDriver += 1 }
    kinds[kind, default: 0] += 1
    if kind == 3 || kind == 5 {
        block()  // sync: run on the calling thread (a real scheduler first drains the queue's earlier blocks)
    } else {
        held.append(Held(kind: kind, queue: queue, block: block))
    }
}

let serial = DispatchQueue(label: "probe.serial")
let concurrent = DispatchQueue(label: "probe.concurrent", attributes: .concurrent)
let group = DispatchGroup()
nonisolated(unsafe) var ran: [String] = []

sb_dispatch_hook = hook
serial.async { ran.append("serial async") }
concurrent.async(flags: .barrier) { ran.append("barrier async") }
serial.asyncAfter(deadline: .now() + 3600) { ran.append("asyncAfter 1 h") }
DispatchQueue.main.async { ran.append("main async") }
DispatchQueue.global().async(group: group) { ran.append("group async") }
group.notify(queue: serial) { ran.append("group notify") }
let value = serial.sync { 42 }
concurrent.sync(flags: .barrier) { ran.append("barrier sync") }
let heldCount = held.count
// The driver runs the held blocks in an order of its choosing: here, last first.
while let job = held.popLast() { job.block() }
sb_dispatch_hook = nil

print("intercepted by kind: " + kinds.keys.sorted().map { "\(names[$0]!) \(kinds[$0]!)" }.joined(separator: ", "))
print("held \(heldCount) blocks; sync returned \(value); ran, in the driver's order: \(ran.joined(separator: " → "))")
print("calls from other threads: \(offDriver)")

// Hook cleared: Dispatch as ever.
let done = DispatchSemaphore(value: 0)
DispatchQueue.global().async { done.signal() }
print("after the hook is cleared, a global async block ran: \(done.wait(timeout: .now() + 5) == .success)")
