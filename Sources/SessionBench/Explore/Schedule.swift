// What a schedule is made of, apart from the executor that runs it (ControlledExecutor.swift,
// the one file with the experimental SPI): the jobs a chooser picks among, and how a schedule ends.

/// A job the controlled executor holds: a task's next step (or an actor's turn), or a timer — a
/// `Task.sleep` — whose firing is one more choice, so an hour's sleep ends when it is chosen.
public struct HeldJob: Sendable {
    /// The job's address: the same task keeps it from step to step.
    public let id: UInt
    public let isTimer: Bool
    /// A timer's deadline on the scheduler's virtual clock, in nanoseconds.
    var deadline: Int64 = 0
    /// A timer that is an answer on its way (``ControlledExecution/answer(after:)``): it may land
    /// at its deadline or later, up to ``ControlledExecution/lateness`` after it, so a timer of the
    /// store's own due in between may fire first.
    var isLate = false
    /// A task, or its timer, that waits for the others to settle (``ControlledExecution/settle(waiting:)``):
    /// it may run only once no other job but a timer is held.
    var settles = false

    /// One of the values of a choice the scenario asks for (``ControlledExecution/choose(_:)``):
    /// which fault the server answers with, say. The first value is the default.
    public internal(set) var isChoice = false

    public init(id: UInt, isTimer: Bool) {
        self.id = id
        self.isTimer = isTimer
    }

    /// The values of a choice among `count`, as the chooser sees them.
    static func choice(of count: Int) -> [HeldJob] {
        (0..<count).map { value in
            var job = HeldJob(id: UInt.max - UInt(value), isTimer: false)
            job.isChoice = true
            return job
        }
    }
}

/// Picks which held job runs next (or, where every job is a choice's value, ``HeldJob/isChoice``,
/// which value the scenario goes on with).
public protocol ScheduleChooser {
    /// The index into `jobs` (in the order they were enqueued) of the job to run at `step`.
    mutating func choose(_ jobs: [HeldJob], step: Int) -> Int
    /// Hears what the job just chosen touched, once it has run (``DepthFirstWalk`` keeps it).
    mutating func ran(_ footprint: StepFootprint)
}

extension ScheduleChooser {
    public mutating func ran(_ footprint: StepFootprint) {}
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

    /// Whether `other` ended the same way, whatever its step count.
    public func sameWay(as other: ScheduleEnd) -> Bool {
        switch (self, other) {
        case (.finished, .finished), (.deadlocked, .deadlocked), (.stepLimit, .stepLimit), (.diverged, .diverged): true
        default: false
        }
    }
}
