import Foundation
import SessionOracle
import TokenServer

/// Answers a scenario's value choices from a fixed list, in order (0 past its end), and every
/// other choice as a random walk would: a generated program held still while the interleavings
/// around it vary.
struct FixedValues: ScheduleChooser {
    private var values: [Int]
    private var next = 0
    private var walk: RandomWalk

    init(_ values: [Int], seed: UInt64) {
        self.values = values
        walk = RandomWalk(seed: seed)
    }

    mutating func choose(_ jobs: [HeldJob], step: Int) -> Int {
        guard jobs.first?.isChoice == true else { return walk.choose(jobs, step: step) }
        defer { next += 1 }
        return next < values.count && jobs.indices.contains(values[next]) ? values[next] : 0
    }
}

extension Exploration.Run {
    /// Whether this run ended the way `failing` did and broke one of the invariants it broke.
    func breaksSome(of failing: Exploration.Run) -> Bool {
        end.sameWay(as: failing.end)
            && !Set(violations.map(\.invariant)).isDisjoint(with: failing.violations.map(\.invariant))
    }
}

extension Exploration {
    /// Schedules tried for each smaller program before the step is kept, and in all: a count, not
    /// a time, so a loaded machine shrinks a failure to the same program as an idle one.
    static let programTries = 1_000
    public static let programBudget = 20_000

    /// Makes `failing`'s generated program smaller (Lincheck shrinks its scenarios the same way):
    /// each step, last first, is dropped when some schedule of the program without it (up to
    /// ``programTries`` random walks around it) still ends the same way and breaks one of the
    /// invariants the failure broke — a smaller program may show fewer of them; passes repeat
    /// until none drops. The
    /// schedule returned carries the smaller program in its choices, so it replays alone. Stops
    /// after `budget` schedules; `failing` itself when it ran no generated program.
    public func shrinkProgram(_ failing: Run, budget: Int = programBudget) -> Run {
        var values = failing.trace.programValues
        guard values.contains(where: { $0 != 0 }) else { return failing }
        var tried = 0
        var best = failing
        var dropped = true
        passes: while dropped {
            dropped = false
            for slot in values.indices.reversed() where values[slot] != 0 {
                var fewer = values
                fewer[slot] = 0
                for attempt in 0..<Self.programTries {
                    if tried >= budget { break passes }
                    tried += 1
                    var chooser = Recording(FixedValues(fewer, seed: Self.scheduleSeed(best.schedule.seed, attempt)))
                    let candidate = run(&chooser, strategy: best.schedule.strategy, seed: best.schedule.seed)
                    guard candidate.uncontrolledJobs == 0, candidate.breaksSome(of: failing) else { continue }
                    (best, values, dropped) = (candidate, fewer, true)
                    break
                }
            }
        }
        return best
    }
}
