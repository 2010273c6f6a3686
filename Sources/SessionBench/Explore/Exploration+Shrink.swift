import Foundation

extension Exploration {
    /// A failing schedule made smaller, and how much.
    public struct Shrunk: Sendable {
        /// The smaller schedule's run: the same end and at least the invariants first broken.
        public var run: Run
        /// The failing schedule's preemptions and steps, as found.
        public var foundPreemptions: Int
        public var foundSteps: Int
        /// Schedules tried while shrinking.
        public var tried: Int
    }

    /// Shrinks `failing` to the fewest preemptions it can (CHESS and Lincheck do the same). A
    /// schedule is the default choice at every step (the task that ran last goes on while it
    /// can, else the job held longest) but at the steps where it chose otherwise, each named by
    /// the task that ran before it and that task's count of steps. First those steps are dropped
    /// one by one, last first, keeping each drop whose schedule still ends the same way and still
    /// breaks every invariant the first one broke; then, where that left preemptions, the default
    /// schedule with up to two of its preemptible steps given to another job is searched, fewest
    /// first (iterative context bounding), for one that fails with fewer. Stops when `budget` is
    /// spent. `nil` when the failure does not come back on replay in this process.
    public func shrink(_ failing: Run, budget: Duration = .seconds(10)) -> Shrunk? {
        typealias Overrides = [StepObserver.Point: Int]
        let started = ContinuousClock.now
        let (strategy, seed) = (failing.schedule.strategy, failing.schedule.seed)
        var first = Recording(Guided(replaying: failing.schedule.choices))
        var best = run(&first, strategy: strategy, seed: seed)
        guard best.fails(like: failing) else { return nil }
        var observed = first.inner.observer
        best.preemptions = observed.preemptions
        best.tasks = observed.tasks
        var shrunk = Shrunk(
            run: best, foundPreemptions: observed.preemptions, foundSteps: failing.schedule.choices.count, tried: 1)
        // A candidate that runs far longer than the failure did is not the same failure (the
        // default choice keeps a spinning task going): cut it short, unless the failure is that.
        let limit =
            if case .stepLimit = failing.end { stepLimit } else {
                min(stepLimit, max(1_000, 4 * failing.schedule.choices.count))
            }
        var tried = 0
        func attempt(_ overrides: Overrides, keeping: Bool = false) -> (run: Run, observer: StepObserver, same: Bool) {
            var chooser = Recording(Guided(overrides: overrides, keepingPreemptible: keeping))
            var candidate = run(&chooser, strategy: strategy, seed: seed, stepLimit: limit)
            tried += 1
            let observer = chooser.inner.observer
            candidate.preemptions = observer.preemptions
            candidate.tasks = observer.tasks
            let same = candidate.uncontrolledJobs == 0 && candidate.fails(like: failing)
            return (candidate, observer, same)
        }
        func spent() -> Bool { ContinuousClock.now - started > budget }

        var changed = true
        drops: while changed, !observed.overrides.isEmpty {
            changed = false
            for point in observed.order.reversed() {
                if spent() { break drops }
                var fewer = observed.overrides
                fewer[point] = nil
                let (candidate, observer, same) = attempt(fewer)
                guard same,
                    (observer.preemptions, observer.overrides.count)
                        < (observed.preemptions, observed.overrides.count)
                else { continue }
                (shrunk.run, observed) = (candidate, observer)
                changed = true
                // The steps after a drop are another schedule's: start again from the last.
                break
            }
        }

        // Schedules of 0, 1, then 2 preemptions, each extending one of the level before at a
        // preemptible step after its own: over the free picks (a job other than the oldest, where
        // no task could go on) those drops kept, and over none.
        let picks = observed.overrides.filter { !observed.preempted.contains($0.key) }
        var frontier: [(overrides: Overrides, after: [(point: StepObserver.Point, others: [Int])])] = []
        search: for bound in 0..<min(observed.preemptions, 3) {
            var next: [(overrides: Overrides, after: [(point: StepObserver.Point, others: [Int])])] = []
            let candidates: [Overrides] =
                bound == 0
                ? (picks.isEmpty ? [picks] : [picks, [:]])
                : frontier.flatMap { base in
                    base.after.flatMap { step in step.others.map { base.overrides.merging([step.point: $0]) { $1 } } }
                }
            for overrides in candidates {
                if spent() { break search }
                let (candidate, observer, same) = attempt(overrides, keeping: true)
                if same, observer.preemptions < observed.preemptions {
                    (shrunk.run, observed) = (candidate, observer)
                    break search
                }
                // Extend only past the last step this candidate chose, so no set is tried twice.
                let chosen = observer.preemptible.lastIndex { overrides[$0.point] != nil } ?? -1
                next.append((overrides, Array(observer.preemptible.dropFirst(chosen + 1))))
            }
            frontier = next
        }
        shrunk.tried += tried
        return shrunk
    }
}
