import TokenServer

/// How `explore` picks the next job: a uniform random walk, or PCT (Burckhardt et al., ASPLOS
/// 2010) — random priorities for the tasks and d−1 points where the running one drops below
/// all others, which finds a bug of depth d with probability ≥ 1/(n·k^(d−1)) for n tasks and k
/// steps.
public enum ScheduleStrategy: String, Sendable, CaseIterable {
    case random
    case pct
    /// Every schedule, depth first (``DepthFirstSearch``).
    case dfs
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
    private var values: SeededRandom
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
        values = SeededRandom(seed: seed ^ 0x5EED_0F_C401_CE5)
    }

    private mutating func priority(of job: HeldJob) -> UInt64 {
        if let known = priorities[job.id] { return known }
        // Above every change point's priority, distinct in practice (64 random bits).
        let drawn = (random.next() >> 8) + (1 << 56)
        priorities[job.id] = drawn
        return drawn
    }

    public mutating func choose(_ jobs: [HeldJob], step: Int) -> Int {
        // A choice's value is no task: drawn at random, from a stream of its own.
        if jobs.first?.isChoice == true { return Int(values.next() % UInt64(jobs.count)) }
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

/// A chooser that keeps the choices it made.
protocol RecordsChoices {
    var choices: [Int] { get }
}

/// Another chooser, with every choice it makes kept.
public struct Recording<Inner: ScheduleChooser>: ScheduleChooser, RecordsChoices {
    public var inner: Inner
    public private(set) var choices: [Int] = []

    public init(_ inner: Inner) { self.inner = inner }

    public mutating func choose(_ jobs: [HeldJob], step: Int) -> Int {
        let choice = inner.choose(jobs, step: step)
        choices.append(choice)
        return choice
    }

    public mutating func ran(_ footprint: StepFootprint) { inner.ran(footprint) }
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
        guard fields.count == 4, fields[0] == Self.version,
            let strategy = ScheduleStrategy(rawValue: String(fields[1])),
            let seed = NumberText.unsigned(String(fields[2]))
        else { return nil }
        var choices: [Int] = []
        for part in fields[3].split(separator: ".", omittingEmptySubsequences: false) where !fields[3].isEmpty {
            let pieces = part.split(separator: "*", omittingEmptySubsequences: false)
            guard (1...2).contains(pieces.count), let value = Int(pieces[0], radix: 36), value >= 0,
                pieces[0].allSatisfy({ $0.isNumber || ($0.isLowercase && $0.isASCII) })
            else { return nil }
            let run = pieces.count == 2 ? NumberText.whole(String(pieces[1])) : 1
            guard let run, (1...1_000_000).contains(run), choices.count + run <= 10_000_000 else { return nil }
            choices += Array(repeating: value, count: run)
        }
        self.init(strategy: strategy, seed: seed, choices: choices)
    }
}
