import Foundation
import SessionContract
import SessionOracle
import Synchronization
import TokenServer

/// `explore`: one store on one scenario, run again and again on the controlled executor, each
/// time in an order the strategy picks, every run judged by the oracle `compare` uses (the
/// contract's model over the calls, the server's ledger, one refresh per expiry). Time is the
/// token clock's, moved by the driver, and every `Task.sleep` is one more choice: a run of many
/// expiries takes microseconds.
///
/// Covered: round-based storms of expiries (`expiry-storm`) and of 401s (`401-storm`), expiries
/// met by a sign-out or a user switch (`sign-out-race`, `user-switch`) or by cancellations
/// (`cancellation-storm`) at a point the schedule picks, storms against a server that fails
/// as the schedule picks (`flaky-server`), programs the schedule writes (`generated`), and those
/// programs under subscribers to the store's state (`session-states`), over two accounts with a
/// store each (`family`), or of clinical requests through API objects whose prompts the schedule
/// answers (`step-up`), with a crash among the steps (`crash-restart`), reads under a writer's
/// 401s (`writes-under-reads`), and store instances sharing one saved session and its refresh lock
/// (`shared-storage`, in memory); stores whose work runs as tasks,
/// actors, main-actor jobs, Dispatch blocks (``ControlledDispatch``), or on the calling thread
/// (locks). Work resumed from another thread (a `Thread`) does not run on the controlled
/// executor: the exploration says so (``Outcome/uncontrolledJobs``) and has no verdict.
public struct Exploration: Sendable {
    /// The scenarios `explore` drives.
    public static let scenarios: Set<Scenario.Kind> = [
        .expiryStorm, .rejectionStorm, .signOutRace, .userSwitch, .cancellationStorm, .flakyServer, .generated,
        .sessionStates, .family, .stepUp, .crashRestart, .steadyReads, .sharedStorage,
    ]

    /// Whether `explore` drives `scenario`: its kind is one of ``scenarios``, and a steady one has a
    /// writer (`writes-under-reads`; plain `steady-reads` measures reads of a token nothing changes).
    public static func drives(_ scenario: Scenario) -> Bool {
        scenarios.contains(scenario.kind) && (scenario.kind != .steadyReads || scenario.writeInterval != nil)
    }

    /// Whether an exploration of `scenario` counts the lifecycle transitions its calls overlapped:
    /// every one but `shared-storage`, whose instances share a session no one of them signed in
    /// (``SharedStorageJudge`` judges them, not the one-store model the transitions are read off).
    public static func countsCoverage(_ scenario: Scenario) -> Bool { scenario.kind != .sharedStorage }

    public var store: StoreDescriptor
    public var scenario: Scenario
    public var strategy: ScheduleStrategy
    public var seed: UInt64
    /// PCT's d.
    public var depth: Int
    /// Which share of the schedules this exploration runs: schedule indices `job`, `job + jobs`,
    /// `job + 2 × jobs`… (`explore --jobs`: the processes of one store split its schedules so).
    public var job = 0
    public var jobs = 1
    /// `dfs`: whether the search skips schedules that only reorder steps that commute (sleep sets).
    public var reduces = true
    /// Steps one schedule may take before it counts as a store that never finishes: a thousand
    /// per call, and never fewer than 200,000.
    public var stepLimit: Int { max(200_000, scenario.tasks * scenario.rounds * 1_000) }

    public init(
        store: StoreDescriptor, scenario: Scenario, strategy: ScheduleStrategy = .random, seed: UInt64 = 1,
        depth: Int = 3
    ) {
        self.store = store
        self.scenario = scenario
        self.strategy = strategy
        self.seed = seed
        self.depth = depth
    }

    /// What one schedule did.
    public struct Run: Sendable {
        public var schedule: ScheduleText
        public var end: ScheduleEnd
        public var violations: [Violation]
        /// Invariants the schedule broke that the store declares it breaks (``Expectations/declared(by:)``):
        /// known, as in `compare`, never a failure of the schedule.
        public var known: Set<Invariant> = []
        /// What the digest is made of; hashed when the digest is read (a replayed or failing
        /// schedule), not for each of the many schedules explored.
        var digestSource: ScheduleDigest
        /// A digest of the ledger and of every call's answer, leaving out real time: equal for
        /// runs that did the same thing (0 for a schedule whose body never returned).
        public var digest: UInt64 { digestSource.value }
        public var uncontrolledJobs: Int
        /// What the callers and the server did, in order, for the interleaving table.
        var trace = StormTrace()
        /// Steps where a task that could go on was set aside for another, and the tasks the
        /// schedule held (PCT's n): `nil` when not counted.
        public var preemptions: Int?
        public var tasks: Int?
        /// The generated program the schedule ran (`generated`), a line per caller and round.
        public var program: [String] { trace.program }

        /// Whether this run ended the way `failing` did and broke every invariant it broke: the
        /// same failure, as a shrunk schedule must keep it.
        func fails(like failing: Run) -> Bool {
            end.sameWay(as: failing.end)
                && Set(violations.map(\.invariant)).isSuperset(of: failing.violations.map(\.invariant))
        }
    }

    /// What the callers and the server did in one schedule.
    struct StormTrace: Sendable {
        var calls: [ObservedCall] = []
        var entries: [LedgerEntry] = []
        /// What happened beside the calls and the server's work: an expiry, a sign-in, a sign-out.
        var marks: [ProgramMark] = []
        /// A generated program's steps, a line per caller and round, and the values chosen for
        /// them, in order (``FixedValues`` plays them again).
        var program: [String] = []
        var programValues: [Int] = []
        /// The lifecycle transitions the schedule drove.
        var coverage = LifecycleCoverage()
        /// Where each cancellation of a generated program landed in the call it cancelled.
        var cancelPoints: [CancelPoint] = []
    }

    /// What exploring found.
    public struct Outcome: Sendable {
        public var schedules = 0
        public var steps = 0
        /// The first schedule with a violation, a deadlock or a step limit.
        public var failing: Run?
        /// The schedule index (from 1, across every job's share) of that first failure.
        public var failingAt: Int?
        /// Jobs enqueued from threads other than the driver's: work not under control.
        public var uncontrolledJobs = 0
        public var seconds = 0.0
        /// Invariants the schedules broke that the store declares it breaks: the verdict is
        /// `known` when nothing else broke.
        public var known: Set<Invariant> = []
        /// The lifecycle transitions the schedules drove, together.
        public var coverage = LifecycleCoverage()
        /// How many cancellations landed at each point of the calls they cancelled (`generated`).
        public var cancelPoints: [String: Int] = [:]
        /// `dfs`: whether every schedule of the program ran (or was pruned as a reordering of one
        /// that ran), and how many were pruned.
        public var exhausted = false
        public var pruned = 0
        /// `dfs`: a schedule replayed down the search's path held other jobs than it did before:
        /// the program does not do the same thing twice, and the search cannot cover it.
        public var nondeterministic = false
    }

    /// How many of `schedules` job `job` of `jobs` runs: indices `job`, `job + jobs`, … below the total.
    public static func share(of schedules: Int, job: Int, jobs: Int) -> Int {
        schedules > job ? (schedules - job + jobs - 1) / jobs : 0
    }

    /// The seed of schedule `index` (from 0) of an exploration seeded `seed`.
    public static func scheduleSeed(_ seed: UInt64, _ index: Int) -> UInt64 {
        var random = SeededRandom(seed: seed &+ UInt64(index) &* 0x9E37_79B9_7F4A_7C15)
        return random.next()
    }

    /// Runs schedules until `budget` says stop, a schedule fails, or work escapes the executor.
    /// `progress` hears each schedule's end.
    public func explore(
        until budget: (_ schedules: Int, _ elapsed: Duration) -> Bool, progress: (Outcome) -> Void = { _ in }
    ) -> Outcome {
        var outcome = Outcome()
        let started = ContinuousClock.now
        var longest = 64
        var search = DepthFirstSearch(reduces: reduces)
        schedules: while budget(outcome.schedules, ContinuousClock.now - started) {
            let index = job + outcome.schedules * jobs
            let seed = Self.scheduleSeed(self.seed, index)
            let run: Run
            switch strategy {
            case .random:
                var chooser = Recording(RandomWalk(seed: seed))
                run = self.run(&chooser, strategy: .random, seed: seed)
            case .pct:
                var chooser = Recording(PriorityChangePoints(seed: seed, depth: depth, steps: longest))
                run = self.run(&chooser, strategy: .pct, seed: seed)
            case .dfs:
                var chooser = Recording(search.walk())
                run = self.run(&chooser, strategy: .dfs, seed: 0)
                let more = search.advance(after: chooser.inner)
                outcome.pruned = search.pruned
                // A pruned schedule is no schedule: the next one, or the search is done.
                if chooser.inner.pruned, run.uncontrolledJobs == 0 {
                    outcome.exhausted = !more
                    if more { continue schedules }
                    break schedules
                }
                if case .diverged = run.end, !chooser.inner.pruned, run.uncontrolledJobs == 0 {
                    outcome.nondeterministic = true
                    break schedules
                }
                outcome.exhausted = !more
            }
            outcome.schedules += 1
            outcome.steps += run.schedule.choices.count
            longest = max(longest, run.schedule.choices.count)
            outcome.uncontrolledJobs = run.uncontrolledJobs
            outcome.known.formUnion(run.known)
            outcome.coverage.merge(run.trace.coverage)
            for point in run.trace.cancelPoints { outcome.cancelPoints[point.rawValue, default: 0] += 1 }
            outcome.seconds = (ContinuousClock.now - started).secondsValue
            if run.uncontrolledJobs > 0 { break }
            let finished = if case .finished = run.end { true } else { false }
            if !run.violations.isEmpty || !finished {
                outcome.failing = run
                outcome.failingAt = index + 1
                break
            }
            progress(outcome)
            if outcome.exhausted { break schedules }
        }
        outcome.seconds = (ContinuousClock.now - started).secondsValue
        return outcome
    }

    /// Plays `schedule` back, its preemptions counted. A schedule that needs a choice past the
    /// jobs held, or that ends with choices left over, does not fit this store and build: its end
    /// is `.diverged`.
    public func replay(_ schedule: ScheduleText) -> Run {
        var chooser = Recording(Guided(replaying: schedule.choices))
        var run = self.run(&chooser, strategy: schedule.strategy, seed: schedule.seed)
        if case .finished(let steps) = run.end, steps < schedule.choices.count { run.end = .diverged(steps: steps) }
        if case .diverged = run.end {} else { run.schedule = schedule }
        run.preemptions = chooser.inner.observer.preemptions
        run.tasks = chooser.inner.observer.tasks
        return run
    }

    /// One schedule, its choices recorded in `chooser`.
    func run<Inner: ScheduleChooser>(
        _ chooser: inout Recording<Inner>, strategy: ScheduleStrategy, seed: UInt64, stepLimit: Int? = nil
    ) -> Run {
        let result = Mutex<(violations: [Violation], digest: ScheduleDigest, trace: StormTrace)>(
            ([], .none, StormTrace()))
        let (store, scenario) = (self.store, self.scenario)
        let before = ControlledExecution.uncontrolledJobs
        let end = ControlledExecution.drive(
            {
                let judged =
                    switch scenario.kind {
                    case .signOutRace: await Self.fenceRounds(store, scenario, switching: false)
                    case .userSwitch: await Self.fenceRounds(store, scenario, switching: true)
                    case .rejectionStorm: await Self.rejectionRounds(store, scenario)
                    case .cancellationStorm: await Self.cancellationRounds(store, scenario)
                    case .flakyServer: await Self.flakyRounds(store, scenario)
                    case .generated: await Self.generatedRounds(store, scenario)
                    case .sessionStates: await Self.stateRounds(store, scenario)
                    case .family: await Self.familyRounds(store, scenario)
                    case .stepUp: await Self.stepUpRounds(store, scenario)
                    case .crashRestart: await Self.crashRounds(store, scenario)
                    case .steadyReads: await Self.steadyRounds(store, scenario)
                    case .sharedStorage: await Self.sharedRounds(store, scenario)
                    default: await Self.expiryStorm(store, scenario)
                    }
                result.withLock { $0 = judged }
            }, chooser: &chooser, stepLimit: stepLimit ?? self.stepLimit,
            footprints: strategy == .dfs,
            // A synchronous read or a state stream is the store's code called, or read, off the main actor.
            storeOnMainActor: store.isolatedToMainActor && !store.offersSynchronousRead && !store.offersStateStream)
        let (violations, digest, trace) = result.withLock { $0 }
        // What the store declares of itself (a 401 refresh on any token, I6) is known, as in
        // `compare`: it does not fail a schedule.
        let known = Set(Expectations.declared(by: store)?.expectations.map(\.invariant) ?? [])
        var found = violations.filter { !known.contains($0.invariant) }
        switch end {
        case .deadlocked(let steps):
            found.append(
                Violation(
                    invariant: .noHang, scenario: scenario.name, seed: seed,
                    summary: "every task waited and nothing was left to run: the store never answered (deadlock)",
                    trace: ["after \(steps) step(s)"], occurrences: 1))
        case .stepLimit(let steps):
            found.append(
                Violation(
                    invariant: .noHang, scenario: scenario.name, seed: seed,
                    summary: "still running after \(steps) steps: the store yields forever without answering",
                    trace: [], occurrences: 1))
        case .finished, .diverged:
            break
        }
        // A digest of a schedule whose body never returned says nothing.
        let finished = if case .finished = end { true } else { false }
        return Run(
            schedule: ScheduleText(strategy: strategy, seed: seed, choices: chooser.choices), end: end,
            violations: found, known: Set(violations.map(\.invariant)).intersection(known),
            digestSource: finished ? digest : .none,
            uncontrolledJobs: ControlledExecution.uncontrolledJobs - before, trace: trace)
    }

    /// The expiry storm: one user signs in; each round the token expires and every caller asks
    /// for a token at once. Judged: the contract's model over every call and sign-in, the ledger
    /// (no two refreshes of a session in flight, no reuse), and one refresh per expiry (I1).
    static func expiryStorm(
        _ descriptor: StoreDescriptor, _ scenario: Scenario
    ) async -> (violations: [Violation], digest: ScheduleDigest, trace: StormTrace) {
        let world = ControlledWorld(descriptor, scenario, users: [Subject("explore-user")])
        let (time, server, store, log, oracle) = (world.time, world.server, world.store, world.log, world.oracle)
        guard await world.signIn() else { return world.judged(digested: false) }
        for round in 0..<scenario.rounds {
            time.advance(by: scenario.tokenLifetime)
            server.setContext("round \(round)")
            let ledgerStart = server.ledger.entries.count
            await withTaskGroup(of: Void.self) { group in
                for caller in 0..<scenario.tasks {
                    group.addTask {
                        _ = await log.call(.validToken, on: store, caller: caller, phase: "round \(round)")
                    }
                }
            }
            let attempts = server.ledger.entries.dropFirst(ledgerStart).filter { $0.call == .refresh }
            oracle.checkOneRefresh(Array(attempts), round: round, what: "expiry", released: nil)
        }
        server.setContext("sign-out")
        await log.signOut(store)
        return world.judged()
    }

}
