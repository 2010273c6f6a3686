/// What a schedule did at each step, against the choice that preempts no one: the task that ran
/// last, while it may go on, else the job held longest. Jobs are named by when they were first
/// seen (0, 1, …), and a step by the task that ran before it and how many steps that task had
/// run (``Point``): names that two runs share for as long as they do the same, and that a change
/// elsewhere in the schedule moves less than a step's index.
public struct StepObserver: Sendable {
    /// A step: right after the `count`-th step of the job named `after` (-1 before the first).
    public struct Point: Hashable, Sendable {
        public let after: Int
        public let count: Int

        public init(after: Int, count: Int) {
            self.after = after
            self.count = count
        }
    }

    private var ordinals: [UInt: Int] = [:]
    private var last: UInt?
    /// Steps run so far, per job ordinal.
    private var runs: [Int: Int] = [:]
    /// Steps where the task that ran last could have gone on and another job ran instead.
    public private(set) var preemptions = 0
    /// The job chosen (by ordinal) at every step whose choice was not the default, and those
    /// steps in the order they came.
    public private(set) var overrides: [Point: Int] = [:]
    public private(set) var order: [Point] = []
    /// Those of them that were preemptions.
    public private(set) var preempted: Set<Point> = []
    /// With ``keepsPreemptible``: every step where the task that ran last could have been set
    /// aside, with the other jobs held there (by ordinal).
    public private(set) var preemptible: [(point: Point, others: [Int])] = []
    var keepsPreemptible = false

    public init() {}

    /// The job's ordinal, naming every job held in the order they were enqueued.
    mutating func ordinal(of id: UInt) -> Int {
        if let known = ordinals[id] { return known }
        ordinals[id] = ordinals.count
        return ordinals.count - 1
    }

    /// How many tasks (and jobs of no task) the schedule held: PCT's n.
    public var tasks: Int { ordinals.count }

    /// The ordinal of a job already seen.
    func known(_ id: UInt) -> Int? { ordinals[id] }

    /// The step about to be chosen.
    var point: Point {
        guard let last, let after = ordinals[last] else { return Point(after: -1, count: 0) }
        return Point(after: after, count: runs[after] ?? 0)
    }

    mutating func see(_ jobs: [HeldJob]) {
        for job in jobs where !job.isChoice { _ = ordinal(of: job.id) }
    }

    /// A choice's value (``HeldJob/isChoice``), made inside the step of the task that ran last: a
    /// value other than the first is an override, kept as `-1 - value`, never a preemption. It
    /// counts as one more step of that task, so the step after it has a name of its own.
    mutating func note(choice values: [HeldJob], chose value: Int) {
        let point = self.point
        if value != 0 {
            overrides[point] = -1 - value
            order.append(point)
        }
        if let last, let running = ordinals[last] { runs[running, default: 0] += 1 }
    }

    /// The next step of the task that ran last, unless it is a timer (a task that sleeps has
    /// stopped of its own accord): setting it aside is a preemption.
    func going(_ jobs: [HeldJob]) -> Int? {
        guard let last else { return nil }
        return jobs.firstIndex { $0.id == last && !$0.isTimer }
    }

    /// The choice that preempts no one.
    func defaultChoice(_ jobs: [HeldJob]) -> Int { going(jobs) ?? 0 }

    mutating func note(_ jobs: [HeldJob], chose index: Int) {
        let going = going(jobs)
        let chosen = ordinal(of: jobs[index].id)
        if keepsPreemptible, let going, jobs.count > 1 {
            preemptible.append((point, jobs.indices.filter { $0 != going }.map { ordinal(of: jobs[$0].id) }))
        }
        if index != going ?? 0 {
            let point = self.point
            overrides[point] = chosen
            order.append(point)
            if going != nil {
                preemptions += 1
                preempted.insert(point)
            }
        }
        runs[chosen, default: 0] += 1
        last = jobs[index].id
    }
}

/// Plays a recorded schedule back, or makes the default choice (``StepObserver``) at every step
/// but the ones a set of overrides names: what shrinking tries. Counts its preemptions either way.
public struct Guided: ScheduleChooser {
    private enum Script {
        case replay(Replay)
        case overrides([StepObserver.Point: Int])
    }

    private var script: Script
    public private(set) var observer = StepObserver()

    public init(replaying choices: [Int]) { script = .replay(Replay(choices)) }

    /// Step → the job (by ``StepObserver`` ordinal) to run there, when it is held.
    public init(overrides: [StepObserver.Point: Int], keepingPreemptible: Bool = false) {
        script = .overrides(overrides)
        observer.keepsPreemptible = keepingPreemptible
    }

    public mutating func choose(_ jobs: [HeldJob], step: Int) -> Int {
        if jobs.first?.isChoice == true { return chooseValue(jobs, step: step) }
        observer.see(jobs)
        let index: Int
        switch script {
        case .replay(var replay):
            index = replay.choose(jobs, step: step)
            script = .replay(replay)
            guard jobs.indices.contains(index) else { return index }
        case .overrides(let overrides):
            if let wanted = overrides[observer.point],
                let held = jobs.firstIndex(where: { observer.known($0.id) == wanted })
            {
                index = held
            } else {
                index = observer.defaultChoice(jobs)
            }
        }
        observer.note(jobs, chose: index)
        return index
    }

    /// A choice's value: the script's, or the overridden one (`-1 - value`), else the first.
    private mutating func chooseValue(_ values: [HeldJob], step: Int) -> Int {
        var value = 0
        switch script {
        case .replay(var replay):
            value = replay.choose(values, step: step)
            script = .replay(replay)
            guard values.indices.contains(value) else { return value }
        case .overrides(let overrides):
            if let wanted = overrides[observer.point], wanted < 0, values.indices.contains(-1 - wanted) {
                value = -1 - wanted
            }
        }
        observer.note(choice: values, chose: value)
        return value
    }
}
