import Foundation
import Testing

@testable import SessionBench

/// The depth-first search on programs of its own: tasks of a few steps, each step with a footprint,
/// walked as the executor would (held jobs in, a choice out, the step's footprint after).
@Suite("dfs: the search tree and its reduction")
struct DepthFirstSearchTests {
    /// A program: each task's steps, in order, as footprints.
    typealias Program = [[StepFootprint]]

    /// Every schedule the search runs to the end, as the task of each step, and how many it pruned.
    static func search(_ program: Program, reduces: Bool) -> (runs: [[Int]], pruned: Int) {
        var search = DepthFirstSearch(reduces: reduces)
        var runs: [[Int]] = []
        while true {
            var walk = search.walk()
            var next = Array(repeating: 0, count: program.count)
            var order: [Int] = []
            while true {
                let held = program.indices.filter { next[$0] < program[$0].count }
                if held.isEmpty { break }
                let index = walk.choose(held.map { HeldJob(id: UInt($0 + 1), isTimer: false) }, step: order.count)
                if index < 0 { break }
                let task = held[index]
                walk.ran(program[task][next[task]])
                next[task] += 1
                order.append(task)
            }
            if !walk.pruned { runs.append(order) }
            if !search.advance(after: walk) { break }
        }
        return (runs, search.pruned)
    }

    static let touches = StepFootprint(store: true)
    static let free = StepFootprint()

    @Test("without the reduction, every interleaving once: (a+b)!/(a!·b!) for two tasks")
    func everyInterleaving() {
        let program: Program = [Array(repeating: Self.touches, count: 3), Array(repeating: Self.touches, count: 2)]
        for reduces in [false, true] {
            let (runs, pruned) = Self.search(program, reduces: reduces)
            #expect(runs.count == 10 && Set(runs).count == 10)
            #expect(pruned == 0)
        }
        let three: Program = Array(repeating: Array(repeating: Self.free, count: 2), count: 3)
        let (runs, _) = Self.search(three, reduces: false)
        #expect(runs.count == 90 && Set(runs).count == 90)
    }

    @Test("with the reduction, steps that commute are run in one order only")
    func independentStepsOnce() {
        let three: Program = Array(repeating: Array(repeating: Self.free, count: 2), count: 3)
        let (runs, pruned) = Self.search(three, reduces: true)
        #expect(runs.count == 1)
        #expect(pruned > 0)
    }

    @Test("with the reduction, every order of the steps that conflict is still run")
    func conflictsKept() {
        // Two tasks of three steps; only their middle steps touch the same thing: two classes of
        // schedules (A's middle step first, or B's), and both must be run.
        let task: [StepFootprint] = [Self.free, Self.touches, Self.free]
        let (runs, _) = Self.search([task, task], reduces: true)
        func firstConflict(_ run: [Int]) -> Int {
            var seen = [0, 0]
            for task in run {
                seen[task] += 1
                if seen[task] == 2 { return task }
            }
            return -1
        }
        #expect(Set(runs.map(firstConflict)) == [0, 1])
        #expect(runs.count < 20)
        // Each kind of footprint conflicts with its own kind, `everything` with all.
        for kind in [
            StepFootprint(store: true), StepFootprint(harness: true), StepFootprint(mainQueue: true),
            StepFootprint(time: true),
        ] {
            #expect(!kind.commutes(with: kind))
            #expect(kind.commutes(with: Self.free))
            #expect(!kind.commutes(with: StepFootprint(everything: true)))
        }
        #expect(StepFootprint(store: true).commutes(with: StepFootprint(harness: true)))
    }

    @Test("a step whose footprint depends on a choice it makes sleeps only on what every value touched")
    func choiceDependentFootprint() {
        // A makes a choice inside its step: with value 0 it also hands the main queue a job, as B
        // does; with value 1 it does not. B first, then A with value 0, must still run.
        var search = DepthFirstSearch(reduces: true)
        var runs: [String] = []
        while true {
            var walk = search.walk()
            var left = ["A", "B"]
            var step = 0
            var text = ""
            while !left.isEmpty {
                let index = walk.choose(left.map { HeldJob(id: $0 == "A" ? 1 : 2, isTimer: false) }, step: step)
                step += 1
                if index < 0 { break }
                let task = left.remove(at: index)
                if task == "A" {
                    let value = walk.choose(HeldJob.choice(of: 2), step: step)
                    step += 1
                    walk.ran(StepFootprint(harness: true, mainQueue: value == 0))
                    text += "A\(value)"
                } else {
                    walk.ran(StepFootprint(store: true, mainQueue: true))
                    text += "B"
                }
            }
            if !walk.pruned { runs.append(text) }
            if !search.advance(after: walk) { break }
        }
        #expect(runs.contains("BA0"), "\(runs)")
        #expect(Set(runs).isSuperset(of: ["A0B", "A1B", "BA0"]), "\(runs)")
    }

    @Test("a choice's values are branches of their own, never asleep")
    func choicesBranch() {
        var search = DepthFirstSearch(reduces: true)
        var values: [Int] = []
        repeat {
            var walk = search.walk()
            let value = walk.choose(HeldJob.choice(of: 3), step: 0)
            values.append(value)
            _ = walk.choose([HeldJob(id: 1, isTimer: false)], step: 1)
            walk.ran(Self.free)
            if !search.advance(after: walk) { break }
        } while true
        #expect(values == [0, 1, 2])
        #expect(search.isFinished)
    }
}

extension ExploreCommandTests {
    @Test(
        "explore --strategy dfs covers a small program on every correct store, says so, and finds the textbook actor's double refresh"
    )
    func depthFirstSearch() async throws {
        let correct = try await ToolProcess.run(
            ["explore", "--strategy", "dfs", "--tasks", "2", "--rounds", "1", "--quiet"], timeout: 600)
        #expect(correct.status == 0, "\(correct.stdout)\(correct.stderr)")
        for store in ["lock-free-read", "mutex", "nslock", "actor-task", "main-actor", "serial-queue"] {
            #expect(Self.row(store, in: correct.stdout).dropFirst().first == "pass", "\(correct.stdout)")
            #expect(
                correct.stdout.contains("  \(store): every schedule of this program explored: "), "\(correct.stdout)")
        }
        // main-actor's turns commute with its callers' own steps: the reduction runs fewer.
        let plain = try await ToolProcess.run(
            [
                "explore", "--strategy", "dfs", "--no-reduction", "--stores", "main-actor", "--tasks", "2", "--rounds",
                "1", "--quiet",
            ], timeout: 600)
        #expect(plain.status == 0, "\(plain.stdout)\(plain.stderr)")
        let reduced = Int(Self.row("main-actor", in: correct.stdout).dropFirst(2).first ?? "")
        let every = Int(Self.row("main-actor", in: plain.stdout).dropFirst(2).first ?? "")
        #expect(reduced != nil && every != nil && reduced! < every!, "\(correct.stdout)\(plain.stdout)")

        let naive = try await ToolProcess.run(
            ["explore", "--strategy", "dfs", "--stores", "actor-naive", "--tasks", "2", "--rounds", "1"], timeout: 300)
        #expect(naive.status == 1, "\(naive.stdout)\(naive.stderr)")
        #expect(Self.row("actor-naive", in: naive.stdout).dropFirst(2).first?.contains("I1") == true, "\(naive.stdout)")
        let replay = try #require(Self.replayArguments(in: naive.stdout), "\(naive.stdout)")
        #expect(replay.contains { $0.hasPrefix("sbx1:dfs:") }, "\(naive.stdout)")
        let again = try await ToolProcess.run(replay + ["--quiet"], timeout: 120)
        #expect(again.status == 1 && Self.digest(in: again.stdout) == Self.digest(in: naive.stdout), "\(again.stdout)")

        for (arguments, wanted) in [
            (["--strategy", "dfs", "--jobs", "2"], "leave out --jobs"),
            (["--no-reduction"], "--strategy dfs only"),
        ] {
            let refused = try await ToolProcess.run(["explore"] + arguments, timeout: 60)
            #expect(refused.status == 2 && refused.stderr.contains(wanted), "\(refused.stderr)")
        }
    }
}
