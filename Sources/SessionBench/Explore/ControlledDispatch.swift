import CDispatchHook
import Synchronization

#if compiler(>=6.3) && os(Linux)
    /// Dispatch under the controlled scheduler: in the exploring process, every block a store hands
    /// to Dispatch from the driving thread — `async`, `asyncAfter`, a barrier, a group, the main
    /// queue — becomes a task of the schedule instead of work for a Dispatch thread
    /// (`Sources/CDispatchHook` catches Swift's calls; research/dispatch-interpose shows how).
    /// Each queue keeps its order: a serial queue's blocks (the main queue's included) run one after
    /// another in the order they came, a global queue's in any order the schedule picks; a queue
    /// the scheduler cannot tell runs as a serial one, always a legal order for a concurrent queue,
    /// and barriers stay barriers. `asyncAfter` waits on the scheduler's virtual clock. `sync` runs
    /// the queue's earlier blocks first, then its own, on the calling thread, as Dispatch would.
    /// Each block runs through Dispatch's own `sync` on its queue (the main queue's on the main
    /// thread, where the driver runs), so code that asks which queue it is on is told the truth.
    /// Blocks from other threads, and every block outside a schedule, go to Dispatch as ever.
    enum ControlledDispatch {
        typealias Block = @convention(block) () -> Void

        /// A block taken from Dispatch, until it runs (a class: Swift's tuple metadata does not
        /// take a block type here).
        final class Pending: @unchecked Sendable {
            let block: Block
            let queue: UnsafeMutableRawPointer
            let barrier: Bool
            let group: UnsafeMutableRawPointer?
            /// Set on the driving thread when it runs, by its task or by a `sync` that drained it.
            var ran = false

            /// Keeps its queue and group alive until it is gone, as Dispatch does for a pending block
            /// (a store may let go of a `DispatchGroup` once it has asked to be notified).
            init(
                _ block: @escaping Block, queue: UnsafeMutableRawPointer, barrier: Bool, group: UnsafeMutableRawPointer?
            ) {
                (self.block, self.queue, self.barrier, self.group) = (block, queue, barrier, group)
                sb_dispatch_retain(queue)
                if let group { sb_dispatch_retain(group) }
            }

            deinit {
                sb_dispatch_release(queue)
                if let group { sb_dispatch_release(group) }
            }
        }

        /// A serial queue's blocks not yet run, oldest first, and the task of its newest.
        struct Serial {
            var pending: [Pending] = []
            var tail: Task<Void, Never>?
        }

        /// Read and written on the driving thread only, in a schedule.
        nonisolated(unsafe) private static var serial: [UnsafeMutableRawPointer: Serial] = [:]

        /// Catches Dispatch's block entry points from now on (the exploring process, at start).
        static func install() {
            sb_dispatch_set_hook(take)
            sb_dispatch_set_wait_hook(wait)
        }

        /// The wait hook: a semaphore or group wait that would block the driving thread, which
        /// runs every job, waits for what nothing can do. A timed one times out at once; one
        /// without a timeout is the deadlock it is, reported by name (``ControlledExecution/blocked``).
        private static let wait: @convention(c) (sb_dispatch_wait_kind, sb_dispatch_wait_phase, Int32) -> Int32 = {
            kind, phase, forever in
            guard ControlledExecutor.shared.isDriving else { return 0 }
            switch phase {
            case sb_dispatch_wait_ended_elsewhere:
                // A thread the scheduler does not run ended it: work out of its control.
                ControlledExecutor.shared.offThread.add(1, ordering: .relaxed)
            case sb_dispatch_wait_never_ends where forever != 0:
                ControlledExecution.blocked(
                    kind == sb_dispatch_wait_semaphore ? "DispatchSemaphore.wait()" : "DispatchGroup.wait()")
            default:
                break
            }
            return 1
        }

        /// Forgets the last schedule's queues: each schedule starts with none.
        static func reset() { serial = [:] }

        /// The hook: takes a block handed to Dispatch on the driving thread; leaves every other.
        private static let take:
            @convention(c) (
                sb_dispatch_kind, UnsafeMutableRawPointer, UInt64, UnsafeMutableRawPointer?, UnsafeMutableRawPointer
            )
                -> Int32 = { kind, queue, when, group, raw in
                    guard ControlledExecutor.shared.isDriving else { return 0 }
                    // The queues' order is the tool's to keep (`dfs`'s reduction).
                    ControlledExecution.touch(StepFootprint(harness: true))
                    let block = unsafeBitCast(raw, to: Block.self)
                    switch kind {
                    case sb_dispatch_sync, sb_dispatch_barrier_sync:
                        drain(queue)
                        run(Pending(block, queue: queue, barrier: kind == sb_dispatch_barrier_sync, group: nil))
                    case sb_dispatch_after:
                        // DISPATCH_TIME_FOREVER: never. A wall-clock time (its top bit set) counts from now.
                        guard when != .max else { return 1 }
                        let now = sb_dispatch_now()
                        let delay = when & (1 << 63) == 0 && when > now ? when - now : 0
                        let pending = Pending(block, queue: queue, barrier: false, group: nil)
                        Task {
                            await ControlledExecution.sleep(for: .nanoseconds(Int64(min(delay, UInt64(Int64.max)))))
                            submit(pending)
                        }
                    case sb_dispatch_group_notify:
                        guard let group else { return 0 }
                        // Holds the group (as `watched`) until its blocks have all run, a tick of
                        // virtual time at a time; then the block joins its queue.
                        let watched = Pending({}, queue: queue, barrier: false, group: group)
                        let pending = Pending(block, queue: queue, barrier: false, group: nil)
                        Task {
                            while let group = watched.group, sb_dispatch_group_is_empty(group) == 0 {
                                await ControlledExecution.sleep(for: .milliseconds(1))
                            }
                            submit(pending)
                        }
                    default:
                        if let group { sb_dispatch_group_enter(group) }
                        submit(Pending(block, queue: queue, barrier: kind == sb_dispatch_barrier_async, group: group))
                    }
                    return 1
                }

        /// `pending` joins its queue now: a task of its own, after the queue's earlier blocks on a
        /// serial queue.
        private static func submit(_ pending: Pending) {
            guard sb_dispatch_is_global(pending.queue) == 0 else {
                Task { run(pending) }
                return
            }
            var queue = serial[pending.queue] ?? Serial()
            queue.pending.append(pending)
            let previous = queue.tail
            queue.tail = Task {
                await previous?.value
                run(pending)
            }
            serial[pending.queue] = queue
        }

        /// Runs the blocks `queue` holds that have not run, oldest first (a `sync` waits for them).
        private static func drain(_ queue: UnsafeMutableRawPointer) {
            while let next = serial[queue]?.pending.first(where: { !$0.ran }) { run(next) }
        }

        /// Runs `pending` once, on its queue as Dispatch would (the main queue's on this thread,
        /// the main one), and counts it out of its group.
        private static func run(_ pending: Pending) {
            guard !pending.ran else { return }
            // A block is the store's code, and its queue's order the tool's.
            ControlledExecution.touch(StepFootprint(store: true, harness: true))
            pending.ran = true
            serial[pending.queue]?.pending.removeAll { $0 === pending }
            let raw = unsafeBitCast(pending.block, to: UnsafeMutableRawPointer.self)
            if sb_dispatch_is_main(pending.queue) != 0 {
                pending.block()
            } else if pending.barrier {
                sb_dispatch_real_barrier_sync(pending.queue, raw)
            } else {
                sb_dispatch_real_sync(pending.queue, raw)
            }
            if let group = pending.group { sb_dispatch_group_leave(group) }
        }
    }
#endif
