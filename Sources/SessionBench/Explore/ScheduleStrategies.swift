import TokenServer

/// How `explore` picks the next job: a uniform random walk, or PCT (Burckhardt et al., ASPLOS
/// 2010) — random priorities for the tasks and d−1 points where the running one drops below
/// all others, which finds a bug of depth d with probability ≥ 1/(n·k^(d−1)) for n tasks and k
/// steps.
public enum ScheduleStrategy: String, Sendable, CaseIterable {
    case random
    case pct
}

/// Uniform: every held job equally likely at every step.
public struct RandomWalk: ScheduleChooser {
    private var random: SeededRandom

    public init(seed: UInt64) { random = SeededRandom(seed: seed) }

    public mutating func choose(_ jobs: [HeldJob], step: Int) -> Int {
        Int(random.next() % UInt64(jobs.count))
    }
}

/// PCT: each task (a job's address, the same from step to step) gets a random priority the first
/// time it is seen, all above `depth`; the highest held runs. At each of the `depth − 1` change
/// points, drawn among the first `steps` steps, the job about to run drops to a priority below
/// every initial one (the i-th point to i), and the highest runs instead.
public struct PriorityChangePoints: ScheduleChooser {
    private var random: SeededRandom
    private var priorities: [UInt: UInt64] = [:]
    /// Step → the priority the job chosen there drops to.
    private let changes: [Int: UInt64]

    /// - Parameters:
    ///   - depth: d, the number of ordering constraints the bug needs (1: no change points).
    ///   - steps: k, how many steps a schedule takes (an estimate: the change points fall in it).
    public init(seed: UInt64, depth: Int, steps: Int) {
        // The change points from a stream of their own: the same seed gives the same priorities
        // at every depth.
        var points = SeededRandom(seed: seed ^ 0xC4A9_6E5D_0F1B_7A33)
        var changes: [Int: UInt64] = [:]
        // Distinct steps, so no change point is lost to another (while the schedule has room).
        for point in 1..<max(1, depth) {
            var step = Int(points.next() % UInt64(max(1, steps)))
            while changes[step] != nil, changes.count < steps { step = Int(points.next() % UInt64(max(1, steps))) }
            changes[step] = UInt64(point)
        }
        self.changes = changes
        random = SeededRandom(seed: seed)
    }

    private mutating func priority(of job: HeldJob) -> UInt64 {
        if let known = priorities[job.id] { return known }
        // Above every change point's priority, distinct in practice (64 random bits).
        let drawn = (random.next() >> 8) + (1 << 56)
        priorities[job.id] = drawn
        return drawn
    }

    public mutating func choose(_ jobs: [HeldJob], step: Int) -> Int {
        var best = 0
        var bestPriority: UInt64 = 0
        for (index, job) in jobs.enumerated() {
            let priority = priority(of: job)
            if priority > bestPriority { (best, bestPriority) = (index, priority) }
        }
        guard let lowered = changes[step] else { return best }
        priorities[jobs[best].id] = lowered
        best = 0
        bestPriority = 0
        for (index, job) in jobs.enumerated() where priorities[job.id]! > bestPriority {
            (best, bestPriority) = (index, priorities[job.id]!)
        }
        return best
    }
}

/// Plays a recorded list of choices back; past its end, or at a choice that no longer fits,
/// it answers an index out of range (the executor calls the schedule diverged).
public struct Replay: ScheduleChooser {
    private let choices: [Int]

    public init(_ choices: [Int]) { self.choices = choices }

    public mutating func choose(_ jobs: [HeldJob], step: Int) -> Int {
        step < choices.count ? choices[step] : -1
    }
}

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
        for job in jobs { _ = ordinal(of: job.id) }
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
}

/// Another chooser, with every choice it makes kept.
public struct Recording<Inner: ScheduleChooser>: ScheduleChooser {
    public var inner: Inner
    public private(set) var choices: [Int] = []

    public init(_ inner: Inner) { self.inner = inner }

    public mutating func choose(_ jobs: [HeldJob], step: Int) -> Int {
        let choice = inner.choose(jobs, step: step)
        choices.append(choice)
        return choice
    }
}

/// A schedule as text, `sbx1:<strategy>:<seed>:<choices>`: the version, how it was found, and
/// the index chosen at each step (base 36, dot-separated; `c*n` for n equal choices in a row).
/// The choices alone replay it.
public struct ScheduleText: Sendable, Hashable, CustomStringConvertible {
    public static let version = "sbx1"
    public var strategy: ScheduleStrategy
    public var seed: UInt64
    public var choices: [Int]

    public init(strategy: ScheduleStrategy, seed: UInt64, choices: [Int]) {
        self.strategy = strategy
        self.seed = seed
        self.choices = choices
    }

    public var description: String {
        var parts: [String] = []
        var index = 0
        while index < choices.count {
            var run = 1
            while index + run < choices.count, choices[index + run] == choices[index] { run += 1 }
            let value = String(choices[index], radix: 36)
            parts.append(run > 2 ? "\(value)*\(run)" : Array(repeating: value, count: run).joined(separator: "."))
            index += run
        }
        return "\(Self.version):\(strategy.rawValue):\(seed):\(parts.joined(separator: "."))"
    }

    /// Reads a schedule string; `nil` names nothing wrong, so the caller says what was expected.
    public init?(_ text: String) {
        let fields = text.split(separator: ":", omittingEmptySubsequences: false)
        guard fields.count == 4, fields[0] == Self.version, let strategy = ScheduleStrategy(rawValue: String(fields[1])),
            let seed = UInt64(fields[2])
        else { return nil }
        var choices: [Int] = []
        for part in fields[3].split(separator: ".", omittingEmptySubsequences: false) where !fields[3].isEmpty {
            let pieces = part.split(separator: "*", omittingEmptySubsequences: false)
            guard (1...2).contains(pieces.count), let value = Int(pieces[0], radix: 36), value >= 0,
                pieces[0].allSatisfy({ $0.isNumber || ($0.isLowercase && $0.isASCII) })
            else { return nil }
            let run = pieces.count == 2 ? Int(pieces[1]) : 1
            guard let run, (1...1_000_000).contains(run), choices.count + run <= 10_000_000 else { return nil }
            choices += Array(repeating: value, count: run)
        }
        self.init(strategy: strategy, seed: seed, choices: choices)
    }
}
