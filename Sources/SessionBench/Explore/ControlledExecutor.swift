import Foundation
import SessionContract
import Synchronization

// The only file that uses Swift's experimental executor SPI: a default executor whose jobs run
// one at a time, on the thread that drives it, in an order a `ScheduleChooser` picks. Everything
// else in `Explore/` works through `ControlledExecution`, and builds where the SPI is missing.
#if compiler(>=6.3) && os(Linux)
    @_spi(ExperimentalCustomExecutors) @_spi(ExperimentalScheduling) import _Concurrency
#endif

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
    /// The main thread (`pthread_self` there), noted by ``install()``, which runs on it.
    private static let mainThread = Atomic<UInt>(0)

    /// Whether the calling thread is the process's main thread: a compare, where Foundation's
    /// `Thread.isMainThread` makes two system calls on Linux, on every step of every schedule.
    static var isMainThread: Bool {
        let main = mainThread.load(ordering: .relaxed)
        return main == 0 ? Thread.isMainThread : UInt(pthread_self()) == main
    }

    /// Makes the controlled executor the process's default executor. Call before any task
    /// exists (first thing in `main`); returns `false` where this build cannot.
    @discardableResult
    public static func install() -> Bool {
        #if compiler(>=6.3) && os(Linux)
            if Thread.isMainThread { mainThread.store(UInt(pthread_self()), ordering: .relaxed) }
            _createExecutors(factory: ControlledFactory.self)
            ControlledDispatch.install()
            StepTouches.hear = { touch($0) }
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

    /// `Task.sleep(for: delay)`, its timer due exactly `delay` of virtual time from now. A sleep
    /// reaches the executor as an instant on the real clock, which moved on while the step ran:
    /// the delay it would read off that instant is a little short, by however long the step took
    /// (milliseconds when the machine is busy), and two sleeps of one length would end apart.
    public static func sleep(for delay: Duration) async {
        #if compiler(>=6.3) && os(Linux)
            if isInstalled, ControlledExecutor.shared.isDriving {
                ControlledExecutor.shared.exactDelay = ControlledExecutor.nanoseconds(delay)
                defer { ControlledExecutor.shared.exactDelay = nil }
                try? await Task.sleep(for: delay)
                return
            }
        #endif
        try? await Task.sleep(for: delay)
    }

    /// Waits until every other task has run as far as it can without a timer: no job is left to
    /// run but timers (a server's answer on its way, a store's own sleep) and other settling
    /// tasks. With `delay`, first waits that long of virtual time, its timer firing only once no
    /// job but timers is held: every timer the others set meanwhile, due within `delay`, fires
    /// before it (a store that publishes 50 ms after a change has published). What the subscribers
    /// of a store's states were sent, they have read by then. Outside an exploration, a sleep of
    /// `delay` and one `Task.yield()`.
    public static func settle(waiting delay: Duration = .zero) async {
        #if compiler(>=6.3) && os(Linux)
            if isInstalled, ControlledExecutor.shared.isDriving {
                // Every job of this task until it is back (a yield may reach the executor as a job
                // that enqueues the task's own) waits for the others.
                // Known by its task's id, not the job running it: code of a task that an actor's
                // turn runs inline runs under the id of whichever task scheduled that turn.
                let executor = ControlledExecutor.shared
                let task = UInt(currentTaskId())
                executor.settling.insert(task)
                defer { executor.settling.remove(task) }
                if delay > .zero {
                    // A sleep's timer is a job of its own: marked as it is enqueued.
                    executor.settlingTimer = true
                    await sleep(for: delay)
                }
                await Task.yield()
                return
            }
        #endif
        if delay > .zero { try? await Task.sleep(for: delay) }
        await Task.yield()
    }

    /// How much later than its deadline an answer on its way (``answer(after:)``) may land: a
    /// minute, the default request timeout of `URLSession`, in nanoseconds.
    public static let lateness: Int64 = 60_000_000_000

    /// An answer's trip: `Task.sleep(for: delay)` as ``sleep(for:)``, except that the answer may
    /// also land later, up to ``lateness`` after its deadline, as the schedule picks: a timer of
    /// the store's own (a timeout, a retry's back-off) due in between may fire first. Answers
    /// among themselves may land in any order.
    public static func answer(after delay: Duration) async {
        #if compiler(>=6.3) && os(Linux)
            if isInstalled, ControlledExecutor.shared.isDriving {
                // The enqueue takes the mark; a sleep that never enqueues (a cancelled task's) leaves it.
                ControlledExecutor.shared.late = true
                await sleep(for: delay)
                ControlledExecutor.shared.late = false
                return
            }
        #endif
        await sleep(for: delay)
    }

    /// A choice the scenario makes as the schedule picks — which fault the server answers a
    /// refresh with, say: a value below `count`, 0 being the default (the value a shrunk schedule
    /// falls back to). One more step of the schedule, recorded and replayed like any other.
    /// Outside an exploration, 0.
    public static func choose(_ count: Int) -> Int {
        #if compiler(>=6.3) && os(Linux)
            if count > 1, isInstalled, ControlledExecutor.shared.isDriving, let pick = ControlledExecutor.shared.pick {
                return pick(count)
            }
        #endif
        return 0
    }

    /// Starts `body` as a task and runs every job on this thread, one at a time, in the order
    /// `chooser` picks, until `body` returns; then the jobs it left (work a store started and
    /// nobody awaited) run too, up to the step limit, so no actor is left mid-turn; any still held
    /// then are dropped, so the next schedule starts empty. A timer is a choice only once every
    /// timer due before it has fired (virtual time: each fires at its own deadline, in order).
    /// Jobs from other threads are
    /// taken as they come and counted (``uncontrolledJobs``); with nothing held and `body` not
    /// done, the driver waits up to `quiet` for one before calling the schedule deadlocked.
    ///
    /// `footprints`: tell the chooser what each step touched (``ScheduleChooser/ran(_:)``).
    /// `storeOnMainActor`: the store declares that all it does runs on the main actor
    /// (``StoreDescriptor/isolatedToMainActor``): the steps' footprints (``ScheduleChooser/ran(_:)``)
    /// say a step off it touches none of the store's state.
    public static func drive(
        _ body: @escaping @Sendable () async -> Void, chooser: inout some ScheduleChooser, stepLimit: Int,
        quiet: Duration = .seconds(1), footprints: Bool = false, storeOnMainActor: Bool = false
    ) -> ScheduleEnd {
        #if compiler(>=6.3) && os(Linux)
            ControlledExecutor.shared.footprints = footprints
            ControlledExecutor.shared.storeOnMainActor = storeOnMainActor
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

        func enqueue(_ job: consuming ExecutorJob) {
            ControlledExecutor.shared.hold(UnownedJob(job), timer: false, main: true)
        }

        func enqueue<C: Clock>(_ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C)
        {
            ControlledExecutor.shared.hold(
                UnownedJob(job), timer: true, after: ControlledExecutor.nanoseconds(delay), main: true)
        }

        func enqueue<C: Clock>(_ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C) {
            ControlledExecutor.shared.hold(
                UnownedJob(job), timer: true, after: ControlledExecutor.nanoseconds(clock.now.duration(to: instant)),
                main: true)
        }

        func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }

        func isIsolatingCurrentContext() -> Bool? { ControlledExecution.isMainThread }

        func checkIsolated() {
            precondition(
                ControlledExecution.isMainThread,
                "Internal inconsistency: main-actor code off the main thread while exploring")
        }

        /// The exploring process never runs the main loop: the driver runs every job itself.
        func run() throws {}
        func stop() {}
    }

    /// The id of the task a job runs (0 for a job that is no task): the runtime's own entry point.
    @_silgen_name("swift_task_getJobTaskId")
    private func jobTaskId(_ job: UnownedJob) -> UInt64

    /// The id of the task running now, as ``jobTaskId(_:)`` gives it; 0 outside a task. A task is
    /// a job, and `UnsafeCurrentTask` holds nothing but the reference to it.
    func currentTaskId() -> UInt64 {
        withUnsafeCurrentTask { task in task.map { jobTaskId(unsafeBitCast($0, to: UnownedJob.self)) } ?? 0 }
    }

    final class ControlledExecutor: TaskExecutor, SchedulingExecutor, @unchecked Sendable {
        static let shared = ControlledExecutor()

        private struct Held {
            var jobs: [(job: UnownedJob, info: HeldJob, main: Bool)] = []
            /// The virtual clock: the deadline of the last timer fired, in nanoseconds.
            var now: Int64 = 0

            /// The jobs that may run next, and where each is held: every job but a timer, and the
            /// timers due first. An answer on its way (``HeldJob/isLate``) may also land later, up to
            /// the lateness bound: a timer due after answers only, and before the earliest of
            /// their bounds, may fire first (answers among themselves may land in any order). The
            /// main actor's jobs run in the order they came, as the main queue runs them: of those,
            /// only the oldest may run next (a timer's job, once due, as any).
            /// Into `enabled` and `at`, emptied first and kept from step to step, so that a step
            /// allocates neither.
            func enabled(into enabled: inout [HeldJob], at: inout [Int]) {
                enabled.removeAll(keepingCapacity: true)
                at.removeAll(keepingCapacity: true)
                var due: Int64?
                var firm: Int64?
                var bound = Int64.max
                for held in jobs where held.info.isTimer {
                    due = min(due ?? .max, held.info.deadline)
                    if !held.info.isLate { firm = min(firm ?? .max, held.info.deadline) }
                }
                if let due {
                    // Every answer due before the first firm timer may still be late until its bound.
                    for held in jobs where held.info.isLate && held.info.deadline < firm ?? .max {
                        bound = min(bound, held.info.deadline &+ ControlledExecution.lateness)
                    }
                    if bound == .max { bound = due }
                }
                var oldestMain: Int?
                var unsettled = false
                for (index, held) in jobs.enumerated() where !held.info.isTimer {
                    if held.main, oldestMain == nil { oldestMain = index }
                    if !held.info.settles { unsettled = true }
                }
                for (index, held) in jobs.enumerated() {
                    if held.info.isTimer {
                        let deadline = held.info.deadline
                        guard deadline == due || (deadline <= bound && deadline <= firm ?? .max) else { continue }
                        if held.info.settles, unsettled { continue }
                    } else if held.main, index != oldestMain {
                        continue
                    } else if held.info.settles, unsettled {
                        continue
                    }
                    enabled.append(held.info)
                    at.append(index)
                }
            }
        }

        private let held = Mutex(Held())
        /// The driving thread's id (`pthread_self`), 0 when none drives.
        private let driver = Atomic<UInt>(0)
        let offThread = Atomic(0)
        /// The id of the job the driver is running, 0 between jobs: read and written on the driving
        /// thread only.
        private(set) var running: UInt = 0
        /// Whether the job the driver is running is a task's (not an actor's turn, which may run
        /// many tasks' work under the id of the task that first scheduled it).
        private(set) var runningIsTask = false
        /// The delay of the sleep about to be enqueued (``ControlledExecution/sleep(for:)``), in
        /// nanoseconds: set, read and cleared on the driving thread only.
        var exactDelay: Int64?
        /// Whether the sleep about to be enqueued is an answer on its way (``ControlledExecution/answer(after:)``):
        /// set, read and cleared on the driving thread only.
        var late = false
        /// The task that settles (``ControlledExecution/settle(waiting:)``), by job id: its jobs wait for the
        /// others. Set, read and cleared on the driving thread only.
        var settling: Set<UInt> = []
        /// Whether the timer about to be enqueued is a settling task's wait (``ControlledExecution/settle(waiting:)``):
        /// set, read and cleared on the driving thread only.
        var settlingTimer = false
        /// What the job running touched, beyond what its kind says (``ControlledExecution/touch(_:)``):
        /// driving thread only.
        var touched = StepFootprint()
        /// Whether the chooser hears what each step touched, and whether the store declares that
        /// all it does runs on the main actor.
        var footprints = false
        var storeOnMainActor = false
        /// The schedule's clocks (``ControlledExecution/watch(_:)``): driving thread only.
        var watchedTimes: [ManualTime] = []
        /// The choices the schedule being driven has made so far, when its chooser records them;
        /// `nil` once it could not follow its script.
        var choicesSoFar: (() -> [Int]?)?
        /// Asks the schedule for a choice's value (``ControlledExecution/choose(_:)``) while a
        /// schedule is driven: called on the driving thread only.
        var pick: ((Int) -> Int)?

        /// Whether this thread is the one driving a schedule.
        var isDriving: Bool { UInt(pthread_self()) == driver.load(ordering: .relaxed) }

        /// Virtual time's unit: every delay is rounded to the nearest one.
        static let tick: Int64 = 1_000_000

        /// A delay in nanoseconds, rounded to the nearest ``tick``; 0 for a clock whose durations are
        /// not `Duration`s. A sleep until an instant arrives as the real time left to it, a few
        /// microseconds short of the sleep asked for, by however long the step took to get from
        /// reading the clock to the enqueue: rounded, two sleeps of 1 ms from one step of virtual
        /// time end at the same instant in every process, and the schedule replays.
        static func nanoseconds<D: DurationProtocol>(_ delay: D) -> Int64 {
            guard let delay = delay as? Duration else { return 0 }
            let (seconds, attoseconds) = delay.components
            guard seconds >= 0 else { return 0 }
            let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
            if overflow || scaled > .max / 4 { return .max / 4 }
            let exact = scaled &+ attoseconds / 1_000_000_000
            return (exact + tick / 2) / tick * tick
        }

        func hold(_ job: UnownedJob, timer: Bool, after nanoseconds: Int64 = 0, main: Bool = false) {
            let onDriver = isDriving
            if !onDriver { offThread.add(1, ordering: .relaxed) }
            // A job is known by the task it runs, which keeps its id from step to step. A job that is
            // no task (what `Task.yield` enqueues, an actor's turn) belongs to the task whose step
            // enqueued it, when one did; else it is known by its address.
            var nanoseconds = nanoseconds
            if timer, onDriver, let exact = exactDelay {
                nanoseconds = exact
                exactDelay = nil
            }
            let task = UInt(jobTaskId(job))
            let id = task != 0 ? task : onDriver && running != 0 ? running : unsafeBitCast(job, to: UInt.self)
            var info = HeldJob(id: id, isTimer: timer)
            if timer, onDriver, late {
                info.isLate = true
                late = false
            }
            // The settling task's own jobs: its steps, and what a step of its own enqueues that is
            // no task (a yield's job). An actor's turn that ran other tasks' work under its id is not.
            if !timer, onDriver, settling.contains(id), task != 0 || runningIsTask { info.settles = true }
            // The main queue's order is the order its jobs came in.
            if main, onDriver { touched.mainQueue = true }
            // A timer's deadline counts from the virtual time the last timer fired at.
            if timer, onDriver { touched.time = true }
            if timer, onDriver, settlingTimer {
                info.settles = true
                settlingTimer = false
            }
            held.withLock { held in
                info.deadline = timer ? held.now &+ max(0, nanoseconds) : 0
                held.jobs.append((job, info, main))
            }
        }

        func enqueue(_ job: consuming ExecutorJob) { hold(UnownedJob(job), timer: false) }

        func enqueue<C: Clock>(_ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C)
        {
            hold(UnownedJob(job), timer: true, after: Self.nanoseconds(delay))
        }

        func enqueue<C: Clock>(_ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C) {
            hold(UnownedJob(job), timer: true, after: Self.nanoseconds(clock.now.duration(to: instant)))
        }

        func drive(
            _ body: @escaping @Sendable () async -> Void, chooser: inout some ScheduleChooser, stepLimit: Int,
            quiet: Duration
        ) -> ScheduleEnd {
            driver.store(UInt(pthread_self()), ordering: .relaxed)
            defer {
                driver.store(0, ordering: .relaxed)
                held.withLock { $0.jobs.removeAll() }
                settling = []
                settlingTimer = false
                watchedTimes = []
            }
            held.withLock { held in
                held.jobs.removeAll()
                held.now = 0
            }
            ControlledDispatch.reset()
            // A choice asked from inside a job is one more step, chosen by the same chooser.
            let box = ChooserBox(chooser)
            defer { chooser = box.chooser }
            choicesSoFar = { box.diverged ? nil : (box.chooser as? any RecordsChoices)?.choices ?? [] }
            defer { choicesSoFar = nil }
            pick = { count in
                let values = HeldJob.choice(of: count)
                let index = box.chooser.choose(values, step: box.steps)
                box.steps += 1
                guard values.indices.contains(index) else {
                    box.diverged = true
                    return 0
                }
                return index
            }
            defer { pick = nil }
            let done = Atomic(false)
            Task.detached {
                await body()
                done.store(true, ordering: .releasing)
            }
            /// Steps the jobs left behind may take once the body has returned.
            let drain = 10_000
            var returnedAt: Int?
            let executor = asUnownedTaskExecutor()
            let mainExecutor = ControlledMainExecutor.shared.asUnownedSerialExecutor()
            // The jobs that may run next and where each is held, refilled at every step.
            var jobs: [HeldJob] = []
            var at: [Int] = []
            jobs.reserveCapacity(16)
            at.reserveCapacity(16)
            while true {
                if returnedAt == nil, done.load(ordering: .acquiring) { returnedAt = box.steps }
                if let returnedAt {
                    if box.steps >= returnedAt + drain { return .finished(steps: box.steps) }
                } else if box.steps >= stepLimit {
                    return .stepLimit(steps: box.steps)
                }
                held.withLock { $0.enabled(into: &jobs, at: &at) }
                // A task that settles waits for the main queue's blocks too: they run now, and
                // whatever they resume is held before it.
                if ControlledExecution.isMainThread, jobs.contains(where: \.settles) {
                    _ = RunLoop.main.run(mode: .default, before: Date())
                    held.withLock { $0.enabled(into: &jobs, at: &at) }
                }
                if jobs.isEmpty {
                    if returnedAt != nil { return .finished(steps: box.steps) }
                    // Nothing here: the main queue's blocks run now (on this thread, the main one, so
                    // whatever they resume is held here), then wait a while for a job from another thread.
                    let until = ContinuousClock.now + quiet
                    while jobs.isEmpty, !done.load(ordering: .acquiring), ContinuousClock.now < until {
                        if ControlledExecution.isMainThread { _ = RunLoop.main.run(mode: .default, before: Date()) }
                        held.withLock { $0.enabled(into: &jobs, at: &at) }
                        if !jobs.isEmpty { break }
                        usleep(200)
                        held.withLock { $0.enabled(into: &jobs, at: &at) }
                    }
                    if jobs.isEmpty, !done.load(ordering: .acquiring) { return .deadlocked(steps: box.steps) }
                    continue
                }
                let index = box.chooser.choose(jobs, step: box.steps)
                guard jobs.indices.contains(index) else { return .diverged(steps: box.steps) }
                // Jobs from other threads only ever append: the position still names the same job.
                let (job, info, main) = held.withLock { held in
                    let taken = held.jobs.remove(at: at[index])
                    if taken.info.isTimer { held.now = max(held.now, taken.info.deadline) }
                    return taken
                }
                // Counted before it runs: a choice the job asks for is the step after it.
                box.steps += 1
                running = info.id
                runningIsTask = jobTaskId(job) != 0
                touched = StepFootprint()
                let clocks = footprints ? watchedTimes.map(\.now) : []
                if main {
                    job.runSynchronously(on: mainExecutor)
                } else {
                    job.runSynchronously(on: executor)
                }
                running = 0
                runningIsTask = false
                // What the step touched: a timer moves virtual time; a settling task waits on every
                // other, and a step that moves the token clock is seen by all; a main-actor job may
                // run the store's code, and so may any other unless the store runs all of its on the
                // main actor; every job off it may touch the tool's own.
                guard footprints else {
                    if box.diverged { return .diverged(steps: box.steps) }
                    continue
                }
                var footprint = touched
                if info.isTimer { footprint.time = true }
                if info.settles || watchedTimes.map(\.now) != clocks { footprint.everything = true }
                if main {
                    footprint.store = true
                } else {
                    footprint.harness = true
                    if !storeOnMainActor { footprint.store = true }
                }
                box.chooser.ran(footprint)
                if box.diverged { return .diverged(steps: box.steps) }
            }
        }
    }
    /// A chooser the drive loop and ``ControlledExecutor/pick`` share, with the schedule's step count.
    final class ChooserBox<Chooser: ScheduleChooser> {
        var chooser: Chooser
        var steps = 0
        var diverged = false

        init(_ chooser: Chooser) { self.chooser = chooser }
    }
#endif
