// The only file that uses Swift's experimental executor SPI: a default executor whose jobs run
// one at a time, on the thread that drives it, in an order a `ScheduleChooser` picks. Everything
// else in `Explore/` works through `ControlledExecution`, and builds where the SPI is missing.
#if compiler(>=6.3) && os(Linux)
@_spi(ExperimentalCustomExecutors) @_spi(ExperimentalScheduling) import _Concurrency
#endif
import Foundation
import Synchronization

/// A job the controlled executor holds: a task's next step (or an actor's turn), or a timer — a
/// `Task.sleep` — whose firing is one more choice, so an hour's sleep ends when it is chosen.
public struct HeldJob: Sendable {
    /// The job's address: the same task keeps it from step to step.
    public let id: UInt
    public let isTimer: Bool
}

/// Picks which held job runs next.
public protocol ScheduleChooser {
    /// The index into `jobs` (in the order they were enqueued) of the job to run at `step`.
    mutating func choose(_ jobs: [HeldJob], step: Int) -> Int
}

/// How driving one schedule ended.
public enum ScheduleEnd: Sendable, Equatable {
    /// The body returned after `steps` jobs.
    case finished(steps: Int)
    /// No job was held and the body had not returned, and none came within the quiet limit:
    /// everything waits on something that never happens.
    case deadlocked(steps: Int)
    /// Past the step limit with the body still running (a store that yields forever).
    case stepLimit(steps: Int)
    /// The chooser could not follow its script (a replayed schedule that no longer fits).
    case diverged(steps: Int)
}

/// Runs async work on the controlled executor, where this build has one.
public enum ControlledExecution {
    /// Whether this build can drive tasks itself (Swift 6.3's executor SPI on Linux).
    public static var isAvailable: Bool {
        #if compiler(>=6.3) && os(Linux)
        return true
        #else
        return false
        #endif
    }

    /// Whether ``install()`` made the controlled executor the default one.
    public static var isInstalled: Bool { installed.load(ordering: .acquiring) }
    private static let installed = Atomic(false)

    /// Makes the controlled executor the process's default executor. Call before any task
    /// exists (first thing in `main`); returns `false` where this build cannot.
    @discardableResult
    public static func install() -> Bool {
        #if compiler(>=6.3) && os(Linux)
        _createExecutors(factory: ControlledFactory.self)
        installed.store(true, ordering: .releasing)
        return true
        #else
        return false
        #endif
    }

    /// Jobs enqueued from a thread other than the driver's since the process started: work the
    /// scheduler did not control (a Dispatch queue, a `Thread`, a continuation resumed elsewhere).
    public static var uncontrolledJobs: Int {
        #if compiler(>=6.3) && os(Linux)
        return ControlledExecutor.shared.offThread.load(ordering: .relaxed)
        #else
        return 0
        #endif
    }

    /// Starts `body` as a task and runs every job on this thread, one at a time, in the order
    /// `chooser` picks, until `body` returns. Jobs left when it returns (work a store started and
    /// nobody awaited) are dropped, so the next schedule starts empty. Jobs from other threads are
    /// taken as they come and counted (``uncontrolledJobs``); with nothing held and `body` not
    /// done, the driver waits up to `quiet` for one before calling the schedule deadlocked.
    public static func drive(
        _ body: @escaping @Sendable () async -> Void, chooser: inout some ScheduleChooser, stepLimit: Int,
        quiet: Duration = .milliseconds(200)
    ) -> ScheduleEnd {
        #if compiler(>=6.3) && os(Linux)
        return ControlledExecutor.shared.drive(body, chooser: &chooser, stepLimit: stepLimit, quiet: quiet)
        #else
        preconditionFailure("Internal inconsistency: drive without the controlled executor")
        #endif
    }
}

#if compiler(>=6.3) && os(Linux)
struct ControlledFactory: ExecutorFactory {
    static var mainExecutor: any MainExecutor { ControlledMainExecutor.shared }
    static var defaultExecutor: any TaskExecutor { ControlledExecutor.shared }
}

/// The main actor's executor in an exploring process: its jobs join the same held list and run
/// on the driving thread — the main thread — isolated to the main actor, as the strategy picks.
final class ControlledMainExecutor: MainExecutor, SchedulingExecutor, @unchecked Sendable {
    static let shared = ControlledMainExecutor()

    func enqueue(_ job: consuming ExecutorJob) { ControlledExecutor.shared.hold(UnownedJob(job), timer: false, main: true) }

    func enqueue<C: Clock>(_ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C) {
        ControlledExecutor.shared.hold(UnownedJob(job), timer: true, main: true)
    }

    func enqueue<C: Clock>(_ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C) {
        ControlledExecutor.shared.hold(UnownedJob(job), timer: true, main: true)
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }

    func isIsolatingCurrentContext() -> Bool? { Thread.isMainThread }

    func checkIsolated() {
        precondition(Thread.isMainThread, "Internal inconsistency: main-actor code off the main thread while exploring")
    }

    /// The exploring process never runs the main loop: the driver runs every job itself.
    func run() throws {}
    func stop() {}
}

final class ControlledExecutor: TaskExecutor, SchedulingExecutor, @unchecked Sendable {
    static let shared = ControlledExecutor()

    private struct Held {
        var jobs: [(job: UnownedJob, info: HeldJob, main: Bool)] = []
    }

    private let held = Mutex(Held())
    /// The driving thread's id (`pthread_self`), 0 when none drives.
    private let driver = Atomic<UInt>(0)
    let offThread = Atomic(0)

    func hold(_ job: UnownedJob, timer: Bool, main: Bool = false) {
        if UInt(pthread_self()) != driver.load(ordering: .relaxed) {
            offThread.add(1, ordering: .relaxed)
        }
        let info = HeldJob(id: unsafeBitCast(job, to: UInt.self), isTimer: timer)
        held.withLock { $0.jobs.append((job, info, main)) }
    }

    func enqueue(_ job: consuming ExecutorJob) { hold(UnownedJob(job), timer: false) }

    func enqueue<C: Clock>(_ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C) {
        hold(UnownedJob(job), timer: true)
    }

    func enqueue<C: Clock>(_ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C) {
        hold(UnownedJob(job), timer: true)
    }

    func drive(
        _ body: @escaping @Sendable () async -> Void, chooser: inout some ScheduleChooser, stepLimit: Int,
        quiet: Duration
    ) -> ScheduleEnd {
        driver.store(UInt(pthread_self()), ordering: .relaxed)
        defer {
            driver.store(0, ordering: .relaxed)
            held.withLock { $0.jobs.removeAll() }
        }
        held.withLock { $0.jobs.removeAll() }
        let done = Atomic(false)
        Task.detached {
            await body()
            done.store(true, ordering: .releasing)
        }
        var steps = 0
        let executor = asUnownedTaskExecutor()
        let mainExecutor = ControlledMainExecutor.shared.asUnownedSerialExecutor()
        while !done.load(ordering: .acquiring) {
            guard steps < stepLimit else { return .stepLimit(steps: steps) }
            var jobs = held.withLock { held in held.jobs.map(\.info) }
            if jobs.isEmpty {
                // Nothing here: wait a while for a job from another thread.
                let until = ContinuousClock.now + quiet
                while jobs.isEmpty, !done.load(ordering: .acquiring), ContinuousClock.now < until {
                    usleep(200)
                    jobs = held.withLock { held in held.jobs.map(\.info) }
                }
                if done.load(ordering: .acquiring) { break }
                if jobs.isEmpty { return .deadlocked(steps: steps) }
            }
            let index = chooser.choose(jobs, step: steps)
            guard jobs.indices.contains(index) else { return .diverged(steps: steps) }
            // Jobs from other threads only ever append: the index still names the same job.
            let (job, _, main) = held.withLock { $0.jobs.remove(at: index) }
            if main {
                job.runSynchronously(on: mainExecutor)
            } else {
                job.runSynchronously(on: executor)
            }
            steps += 1
        }
        return .finished(steps: steps)
    }
}
#endif
