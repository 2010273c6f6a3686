import Foundation
import Testing

@testable import SessionBench

/// The parts of `explore` that are plain values: schedule strings and the strategies' choices.
@Suite("Explore: schedules and strategies")
struct ScheduleTests {
    @Test("a schedule string reads back as the choices it was written from; runs are folded")
    func roundTrip() throws {
        let choices = [0, 0, 0, 0, 3, 1, 1, 35, 36, 0, 2, 2, 2]
        let text = ScheduleText(strategy: .pct, seed: 42, choices: choices)
        #expect(text.description == "sbx1:pct:42:0*4.3.1.1.z.10.0.2*3")
        let read = try #require(ScheduleText(text.description))
        #expect(read == text)
        #expect(ScheduleText("sbx1:random:7:")?.choices == [])
    }

    @Test(
        "anything else is not a schedule string",
        arguments: [
            "", "sbx1", "sbx2:random:1:0", "sbx1:bfs:1:0", "sbx1:random:-1:0", "sbx1:random:1:0..1", "sbx1:random:1:A",
            "sbx1:random:1:0*0", "sbx1:random:1:0*99999999", "sbx1:random:1:0:1", "sbx1:random:1:-1",
            "sbx1:random:1:0*",
        ])
    func refused(_ text: String) {
        #expect(ScheduleText(text) == nil, "\(text)")
    }

    static func jobs(_ ids: [UInt]) -> [HeldJob] { ids.map { HeldJob(id: $0, isTimer: false) } }

    @Test("PCT of depth 1 runs the highest-priority task for as long as it has a step; the same seed, the same order")
    func pctKeepsPriorities() {
        var first = PriorityChangePoints(seed: 5, depth: 1, steps: 10)
        var second = PriorityChangePoints(seed: 5, depth: 1, steps: 10)
        let held = Self.jobs([10, 20, 30])
        let pick = first.choose(held, step: 0)
        #expect(second.choose(held, step: 0) == pick)
        // The same task is chosen again wherever it stands among the jobs held.
        let favourite = held[pick].id
        let reordered = Self.jobs([30, 20, 10].filter { $0 != favourite } + [favourite])
        #expect(first.choose(reordered, step: 1) == reordered.count - 1)
    }

    @Test("at a change point the task about to run drops below every other")
    func pctChangePoint() {
        // depth 2 over one step: the one change point is step 0.
        var chooser = PriorityChangePoints(seed: 9, depth: 2, steps: 1)
        var plain = PriorityChangePoints(seed: 9, depth: 1, steps: 1)
        let held = Self.jobs([1, 2])
        let without = plain.choose(held, step: 0)
        let with = chooser.choose(held, step: 0)
        #expect(with != without, "the task that would have run is passed over")
        #expect(chooser.choose(held, step: 1) == with, "and stays below the other")
    }

    @Test("--jobs N splits the schedules into N shares that cover each index once", arguments: [1, 2, 3, 7, 64])
    func shares(jobs: Int) {
        for total in [0, 1, 2, 5, 64, 1_000, 1_001] {
            let shares = (0..<jobs).map { Exploration.share(of: total, job: $0, jobs: jobs) }
            #expect(shares.reduce(0, +) == total, "\(total) over \(jobs): \(shares)")
            // Job j runs indices j, j + jobs, …: its count is how many of them are below the total.
            for (job, share) in shares.enumerated() {
                #expect(
                    share == stride(from: job, to: total, by: jobs).underestimatedCount,
                    "job \(job) of \(jobs), \(total)")
            }
        }
    }

    @Test("a replay answers out of range once its script ends, so the executor calls it diverged")
    func replayEnds() {
        var replay = Replay([1, 0])
        let held = Self.jobs([1, 2])
        #expect(replay.choose(held, step: 0) == 1)
        #expect(replay.choose(held, step: 1) == 0)
        #expect(replay.choose(held, step: 2) == -1)
    }

    @Test("setting aside a task whose next step is held is a preemption; a step past a sleep, or a free pick, is not")
    func preemptionsCounted() {
        var observer = StepObserver()
        let held = Self.jobs([1, 2, 3])
        observer.see(held)
        observer.note(held, chose: 0)  // task 1 runs: the default, nothing to set aside
        #expect(observer.preemptions == 0 && observer.overrides.isEmpty)
        observer.note(held, chose: 1)  // task 1 could go on; task 2 runs
        let afterOne = StepObserver.Point(after: 0, count: 1)
        #expect(observer.preemptions == 1 && observer.overrides == [afterOne: 1])
        let afterSleep = [HeldJob(id: 2, isTimer: true), HeldJob(id: 3, isTimer: false)]
        observer.note(afterSleep, chose: 1)  // task 2 sleeps: task 3 is a free pick, not the oldest
        let afterTwo = StepObserver.Point(after: 1, count: 1)
        #expect(observer.preemptions == 1 && observer.overrides[afterTwo] == 2)
        #expect(observer.order == [afterOne, afterTwo])
        let others = Self.jobs([1, 2])
        observer.note(others, chose: 0)  // task 3 is not held: the oldest is the default
        #expect(observer.preemptions == 1 && observer.overrides.count == 2)
        #expect(observer.tasks == 3)
    }

    @Test("a guided schedule takes the default at every step but the ones it overrides, naming jobs by first sight")
    func guided() {
        var plain = Guided(overrides: [:])
        let held = Self.jobs([7, 8, 9])
        #expect(plain.choose(held, step: 0) == 0)
        #expect(plain.choose(Self.jobs([8, 9, 7]), step: 1) == 2, "task 7 goes on wherever it is held")
        // Ordinal 2 is the third job first seen: 9; it runs right after the first step of job 7.
        var steered = Guided(overrides: [StepObserver.Point(after: 0, count: 1): 2])
        #expect(steered.choose(held, step: 0) == 0)
        #expect(steered.choose(Self.jobs([8, 9, 7]), step: 1) == 1)
        #expect(steered.observer.preemptions == 1)
        // A replay follows its script and counts the same way.
        var replay = Guided(replaying: [0, 1])
        #expect(replay.choose(held, step: 0) == 0)
        #expect(replay.choose(Self.jobs([8, 9, 7]), step: 1) == 1)
        #expect(replay.choose(held, step: 2) == -1)
        #expect(replay.observer.preemptions == 1)
    }

    #if compiler(>=6.3) && os(Linux)
        @Test(
            "virtual time rounds each delay to a millisecond: a sleep that arrives a few microseconds short is a full one"
        )
        func tick() {
            #expect(ControlledExecutor.nanoseconds(Duration.milliseconds(1) - .microseconds(7)) == 1_000_000)
            #expect(ControlledExecutor.nanoseconds(Duration.milliseconds(1) + .microseconds(7)) == 1_000_000)
            #expect(ControlledExecutor.nanoseconds(Duration.microseconds(400)) == 0)
            #expect(ControlledExecutor.nanoseconds(Duration.milliseconds(50)) == 50_000_000)
            #expect(ControlledExecutor.nanoseconds(Duration.seconds(-1)) == 0)
            #expect(ControlledExecutor.nanoseconds(Duration.seconds(Int64.max)) == .max / 4)
        }
    #endif

    @Test("a random walk's choices come from its seed alone")
    func randomWalk() {
        var one = Recording(RandomWalk(seed: 3))
        var two = Recording(RandomWalk(seed: 3))
        let held = Self.jobs(Array(1...7))
        for step in 0..<50 {
            _ = one.choose(held, step: step)
            _ = two.choose(held, step: step)
        }
        #expect(one.choices == two.choices)
        #expect(Set(one.choices).count > 3 && one.choices.allSatisfy { (0..<7).contains($0) })
    }
}

/// `explore` through the executable: each store in a process whose default executor is the
/// controlled one.
@Suite(
    "Explore: through the command line", .tags(.slow), .skippedInQuickRun, .serialized,
    .disabled(if: TestEnvironment.isThreadSanitized, Comment(rawValue: TestEnvironment.processSuiteSkipped)))
struct ExploreCommandTests {
    /// The replay command the report prints, as arguments.
    static func replayArguments(in stdout: String) -> [String]? {
        guard let line = stdout.split(separator: "\n").first(where: { $0.contains("replay: session-bench explore") })
        else { return nil }
        let command = line.components(separatedBy: "replay: session-bench ")[1]
        return command.split(separator: " ").map(String.init)
    }

    /// The table row of `store`, split into its columns (verdicts of two words are split too).
    static func row(_ store: String, in stdout: String) -> [String] {
        stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }.first { $0.first == store }
            ?? []
    }

    static func digest(in stdout: String) -> String? {
        stdout.split(separator: "\n").first { $0.contains("ledger digest: ") }.map {
            String($0.components(separatedBy: "ledger digest: ")[1])
        }
    }

    @Test(
        "the re-entrant actor breaks single-flight at once; its schedule replays in other processes to the same ledger")
    func naiveActorFoundAndReplayed() async throws {
        let run = try await ToolProcess.run(["explore", "--stores", "actor-naive", "--quiet"], timeout: 120)
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        #expect(
            Self.row("actor-naive", in: run.stdout).dropFirst().prefix(2) == ["violated", "I1,I7,I27"], "\(run.stdout)")
        let replay = try #require(Self.replayArguments(in: run.stdout), "\(run.stdout)")
        let digest = try #require(Self.digest(in: run.stdout), "\(run.stdout)")
        #expect(!run.stdout.contains("explore-user"), "the user id is never printed")
        for _ in 0..<3 {
            let again = try await ToolProcess.run(replay + ["--quiet"], timeout: 120)
            #expect(again.status == 1, "\(again.stdout)\(again.stderr)")
            #expect(Self.digest(in: again.stdout) == digest, "\(again.stdout)")
            #expect(again.stdout.contains("violated I1"), "\(again.stdout)")
        }
    }

    @Test("--jobs 2 runs every schedule once, across two processes, and finds the failure one process finds")
    func jobs() async throws {
        let split = try await ToolProcess.run(
            ["explore", "--stores", "mutex", "--schedules", "301", "--jobs", "2", "--quiet"], timeout: 300)
        #expect(split.status == 0, "\(split.stdout)\(split.stderr)")
        #expect(Self.row("mutex", in: split.stdout).prefix(3) == ["mutex", "pass", "301"], "\(split.stdout)")
        let one = try await ToolProcess.run(
            ["explore", "--stores", "actor-naive", "--seed", "5", "--quiet"], timeout: 120)
        let two = try await ToolProcess.run(
            ["explore", "--stores", "actor-naive", "--seed", "5", "--jobs", "2", "--quiet"], timeout: 120)
        #expect(two.status == 1, "\(two.stdout)\(two.stderr)")
        #expect(
            Self.replayArguments(in: two.stdout) == Self.replayArguments(in: one.stdout), "\(one.stdout)\(two.stdout)")
        // The first failing schedule's index (the schedules column counts both processes' runs).
        #expect(
            Self.row("actor-naive", in: two.stdout).dropFirst(4).first
                == Self.row("actor-naive", in: one.stdout).dropFirst(4).first)
    }

    @Test("correct stores whose work is all tasks and actors pass 300 schedules")
    func correctStoresPass() async throws {
        let run = try await ToolProcess.run(
            ["explore", "--stores", "mutex,lock-free-read,actor-task", "--schedules", "300", "--quiet"], timeout: 300)
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let rows = run.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        for store in ["mutex", "lock-free-read", "actor-task"] {
            #expect(
                rows.contains { $0.count >= 3 && $0[0] == store && $0[1] == "pass" && $0[2] == "300" },
                "\(store): \(run.stdout)")
        }
    }

    static let selfTest = ["SESSION_BENCH_SELF_TEST_STORES": "1"]

    @Test("a failure is shrunk to its fewest preemptions, printed as a table a column per caller, and replays")
    func shrunkAndTabled() async throws {
        let run = try await ToolProcess.run(["explore", "--stores", "actor-naive", "--quiet"], timeout: 120)
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        // The re-entrant actor needs no preemption at all: every caller's await is a hop.
        #expect(run.stdout.contains(", 0 preemptions (shrunk from "), "\(run.stdout)")
        let lines = run.stdout.split(separator: "\n").map(String.init)
        let header = try #require(
            lines.firstIndex { $0.contains("caller 0") && $0.contains("server") }, "\(run.stdout)")
        #expect(lines[header].contains("caller 3"))
        #expect(lines.dropFirst(header).contains { $0.trimmingCharacters(in: .whitespaces) == "refresh g1 → g2" })
        #expect(lines.dropFirst(header).contains { $0.trimmingCharacters(in: .whitespaces) == "← g2" })
        let replay = try #require(Self.replayArguments(in: run.stdout), "\(run.stdout)")
        let again = try await ToolProcess.run(replay + ["--quiet"], timeout: 120)
        #expect(again.status == 1 && Self.digest(in: again.stdout) == Self.digest(in: run.stdout), "\(again.stdout)")
        #expect(again.stdout.contains(", 0 preemptions"), "\(again.stdout)")
    }

    @Test("a bug of depth 3 — two preemptions in order — is found by PCT at depth 3, never at depth 2 or 1")
    func depthThree() async throws {
        for depth in [1, 2] {
            let run = try await ToolProcess.run(
                [
                    "explore", "--stores", "gap-before-publish", "--strategy", "pct", "--depth", "\(depth)",
                    "--schedules", "1000",
                    "--quiet",
                ], environment: Self.selfTest, timeout: 120)
            #expect(run.status == 0, "depth \(depth): \(run.stdout)\(run.stderr)")
            #expect(
                Self.row("gap-before-publish", in: run.stdout).dropFirst().prefix(2) == ["pass", "1000"],
                "\(run.stdout)")
        }
        let run = try await ToolProcess.run(
            [
                "explore", "--stores", "gap-before-publish", "--strategy", "pct", "--depth", "3", "--schedules", "1000",
                "--quiet",
            ],
            environment: Self.selfTest, timeout: 120)
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        #expect(Self.row("gap-before-publish", in: run.stdout).dropFirst().first == "violated", "\(run.stdout)")
        #expect(run.stdout.contains("I1 single-flight") && run.stdout.contains(", 2 preemptions"), "\(run.stdout)")
    }

    @Test(
        "a refresh that passed its cancellation check before a sign-out (or a switch) lands after it: found in sign-out-race and user-switch, and replays",
        arguments: [("sign-out-race", "I8"), ("user-switch", "I9")])
    func landingAfterFenceFound(_ scenario: String, _ invariant: String) async throws {
        let run = try await ToolProcess.run(
            ["explore", "--stores", "cancel-fenced", "--scenario", scenario, "--quiet"], environment: Self.selfTest,
            timeout: 120)
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        let row = Self.row("cancel-fenced", in: run.stdout)
        #expect(row.dropFirst().first == "violated", "\(run.stdout)")
        #expect(row.dropFirst(2).first?.split(separator: ",").contains(Substring(invariant)) == true, "\(run.stdout)")
        let replay = try #require(Self.replayArguments(in: run.stdout), "\(run.stdout)")
        let digest = try #require(Self.digest(in: run.stdout), "\(run.stdout)")
        let again = try await ToolProcess.run(replay + ["--quiet"], environment: Self.selfTest, timeout: 120)
        #expect(again.status == 1 && Self.digest(in: again.stdout) == digest, "\(again.stdout)")
    }

    @Test(
        "correct stores whose work is all tasks and actors pass 300 schedules of every scenario explore drives beyond expiry-storm",
        arguments: ["sign-out-race", "user-switch", "401-storm", "cancellation-storm", "flaky-server"])
    func correctStoresPassFences(_ scenario: String) async throws {
        let stores = ["mutex", "lock-free-read", "actor-task"]
        let run = try await ToolProcess.run(
            [
                "explore", "--stores", stores.joined(separator: ","), "--scenario", scenario, "--schedules", "300",
                "--quiet",
            ],
            timeout: 300)
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        for store in stores {
            #expect(Self.row(store, in: run.stdout).prefix(3) == [store, "pass", "300"], "\(store): \(run.stdout)")
        }
    }

    /// `explore` of `store` in `scenario` finds `invariant` (`I11`, with its name as printed), and the
    /// printed replay brings back the same digest.
    func caughtAndReplayed(_ store: String, _ scenario: String, _ invariant: String, named name: String) async throws {
        let run = try await ToolProcess.run(
            ["explore", "--stores", store, "--scenario", scenario, "--quiet"], environment: Self.selfTest, timeout: 120)
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        #expect(Self.row(store, in: run.stdout).prefix(3) == [store, "violated", invariant])
        #expect(run.stdout.contains("\(invariant) \(name)"), "\(run.stdout)")
        let replay = try #require(Self.replayArguments(in: run.stdout), "\(run.stdout)")
        let digest = try #require(Self.digest(in: run.stdout), "\(run.stdout)")
        let again = try await ToolProcess.run(replay + ["--quiet"], environment: Self.selfTest, timeout: 120)
        #expect(again.status == 1 && Self.digest(in: again.stdout) == digest, "\(again.stdout)")
    }

    @Test("cancellation-storm: a store whose cancelled 401 caller cancels the shared refresh is caught, and replays")
    func cancelledRejectionCancelsEveryone() async throws {
        try await caughtAndReplayed("cancels-shared-401", "cancellation-storm", "I11", named: "cancellation-isolated")
    }

    @Test("401-storm: a store that keeps handing out the token a 401 rotated is caught by a read of the fresh token")
    func rotatedTokenCached() async throws {
        try await caughtAndReplayed("caches-past-401", "401-storm", "I5", named: "monotonic")
    }

    @Test(
        "401-storm: a store whose 401 ignores which token was refused is caught, and replays; one that declares it is known"
    )
    func rejectionStormExplored() async throws {
        let run = try await ToolProcess.run(
            ["explore", "--stores", "gap-before-publish,declares-401-refresh", "--scenario", "401-storm", "--quiet"],
            environment: Self.selfTest, timeout: 120)
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        #expect(Self.row("gap-before-publish", in: run.stdout).prefix(3) == ["gap-before-publish", "violated", "I6"])
        #expect(run.stdout.contains("I6 401-refreshes-current-only"), "\(run.stdout)")
        // Its declared I6 is known, as in compare: it does not fail a schedule, and it is not a pass.
        #expect(
            Self.row("declares-401-refresh", in: run.stdout).prefix(3) == ["declares-401-refresh", "known", "I6"],
            "\(run.stdout)")
        let replay = try #require(Self.replayArguments(in: run.stdout), "\(run.stdout)")
        let digest = try #require(Self.digest(in: run.stdout), "\(run.stdout)")
        let again = try await ToolProcess.run(replay + ["--quiet"], environment: Self.selfTest, timeout: 120)
        #expect(again.status == 1 && Self.digest(in: again.stdout) == digest, "\(again.stdout)")
    }

    @Test("a Mutex store with no single-flight refresh is caught too: every server answer is a choice")
    func lockStoreRaceFound() async throws {
        let run = try await ToolProcess.run(
            ["explore", "--stores", "mutex-unshared-refresh", "--quiet"], environment: Self.selfTest, timeout: 120)
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        #expect(Self.row("mutex-unshared-refresh", in: run.stdout).dropFirst().first == "violated", "\(run.stdout)")
        #expect(run.stdout.contains("I1 single-flight"), "\(run.stdout)")
    }

    @Test(
        "a correct store's schedule replays in other processes to the same ledger; one that does not fit says so, exit 2"
    )
    func correctStoreReplays() async throws {
        // Always the first job held: too long a script ends with choices left over, and says
        // where the schedule finished.
        let long = try await ToolProcess.run([
            "explore", "--stores", "mutex", "--replay", "sbx1:random:1:0*100000", "--quiet",
        ])
        #expect(long.status == 2, "\(long.stdout)\(long.stderr)")
        #expect(long.stdout.contains("the schedule does not replay"), "\(long.stdout)")
        let words = long.stdout.components(separatedBy: "diverged at step ")
        let steps = try #require(words.count > 1 ? Int(words[1].prefix { $0.isNumber }) : nil, "\(long.stdout)")
        // Exactly that long: it finishes, and does the same thing in every process (the stores'
        // waiters sit in dictionaries: the exploring processes hash the same way every time).
        var digests: [String] = []
        for _ in 0..<3 {
            let again = try await ToolProcess.run(
                ["explore", "--stores", "mutex", "--replay", "sbx1:random:1:0*\(steps)", "--quiet"])
            #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
            digests.append(try #require(Self.digest(in: again.stdout), "\(again.stdout)"))
        }
        #expect(Set(digests).count == 1, "\(digests)")
        // Cut short: a choice past the end of the script.
        let cut = try await ToolProcess.run([
            "explore", "--stores", "mutex", "--replay", "sbx1:random:1:0.0", "--quiet",
        ])
        #expect(cut.status == 2 && cut.stdout.contains("the schedule does not replay"), "\(cut.stdout)\(cut.stderr)")
    }

    @Test("a store resumed from a Thread of its own is UNCONTROLLED, named, with no verdict")
    func threadStoreUncontrolled() async throws {
        let run = try await ToolProcess.run(
            ["explore", "--stores", "thread-hop", "--quiet"], environment: Self.selfTest, timeout: 120)
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(Self.row("thread-hop", in: run.stdout).dropFirst().first == "UNCONTROLLED", "\(run.stdout)")
        #expect(run.stdout.contains("thread-hop: UNCONTROLLED — "), "\(run.stdout)")
    }

    @Test("stores on Dispatch queues' sync calls, and on the main actor, run on the driving thread: explored, and pass")
    func syncQueuesAndMainActorPass() async throws {
        let run = try await ToolProcess.run(
            ["explore", "--stores", "serial-queue,barrier-queue,main-actor,nslock", "--schedules", "100", "--quiet"],
            timeout: 300)
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(
            !run.stdout.contains("UNCONTROLLED") && run.stdout.components(separatedBy: " pass ").count == 5,
            "\(run.stdout)")
    }

    @Test("a store that never answers is a deadlock (I3), one that traps is crashed, and the tool goes on to the next")
    func hangs() async throws {
        let run = try await ToolProcess.run(
            ["explore", "--stores", "hangs-on-expiry,crashes-on-expiry,mutex", "--schedules", "5", "--quiet"],
            environment: Self.selfTest,
            timeout: 300)
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        #expect(
            Self.row("hangs-on-expiry", in: run.stdout).dropFirst().prefix(2) == ["violated", "I3"], "\(run.stdout)")
        #expect(run.stdout.contains("deadlock"), "\(run.stdout)")
        #expect(Self.row("crashes-on-expiry", in: run.stdout).dropFirst().first == "crashed", "\(run.stdout)")
        #expect(Self.row("mutex", in: run.stdout).dropFirst().first == "pass", "\(run.stdout)")
    }

    @Test(
        "bad input is one line and exit 2",
        arguments: [
            (["explore", "--strategy", "bfs"], "--strategy must be random, pct or dfs"),
            (["explore", "--scenario", "replicas"], "expiry-storm, 401-storm, sign-out-race"),
            (["explore", "--replay", "sbx1:random:1:0"], "--replay plays one store's schedule"),
            (["explore", "--stores", "mutex", "--replay", "nonsense"], "is not a schedule string"),
            (["explore", "--schedules", "10", "--for", "1s"], "give --schedules or --for, not both"),
            (["explore", "--stores", "mutex", "--replay", "sbx1:random:1:0", "--jobs", "2"], "leave out --jobs"),
            // A replay plays the schedule it is given: what it would ignore is refused, not dropped.
            (
                ["explore", "--stores", "mutex", "--replay", "sbx1:random:1:0", "--schedules", "10"],
                "leave out --schedules"
            ),
            (["explore", "--stores", "mutex", "--replay", "sbx1:random:1:0", "--for", "1s"], "leave out --for"),
            (
                ["explore", "--stores", "mutex", "--replay", "sbx1:random:1:0", "--strategy", "pct"],
                "leave out --strategy"
            ),
            (["explore", "--stores", "mutex", "--replay", "sbx1:random:1:0", "--depth", "2"], "leave out --depth"),
            (["explore", "--stores", "mutex", "--replay", "sbx1:random:1:0", "--seed", "3"], "leave out --seed"),
            (
                ["explore", "--stores", "mutex", "--replay", "sbx1:random:1:0", "--include-broken"],
                "leave out --include-broken"
            ),
            (
                ["explore", "--stores", "mutex", "--replay", "sbx1:random:1:0", "--replay", "sbx1:random:2:0"],
                "--replay is given 2 times"
            ),
            (["explore", "--jobs", "65"], "--jobs"),
            (["explore", "--tasks", "0"], "--tasks"),
            (["explore", "--stores", "nope"], "unknown store"),
        ])
    func badInput(_ arguments: [String], _ mention: String) async throws {
        let run = try await ToolProcess.run(arguments, timeout: 60)
        #expect(run.status == 2, "\(arguments): \(run.stderr)")
        #expect(
            run.stderr.split(separator: "\n").count == 1 && run.stderr.contains(mention), "\(arguments): \(run.stderr)")
        #expect(run.stdout.isEmpty)
    }
}

@Suite("Explore: a choice's value")
struct ScheduleChoiceTests {
    @Test("a choice's value other than the first is an override named by the running task's step, never a preemption")
    func choiceOverride() {
        var guided = Guided(replaying: [0, 2, 0])
        let task = HeldJob(id: 7, isTimer: false)
        #expect(guided.choose([task], step: 0) == 0)
        #expect(guided.choose(HeldJob.choice(of: 3), step: 1) == 2)
        #expect(guided.choose([task], step: 2) == 0)
        #expect(guided.observer.preemptions == 0)
        #expect(guided.observer.overrides == [StepObserver.Point(after: 0, count: 1): -3])
        // Played back from the overrides alone, the same value comes out at the same step.
        var again = Guided(overrides: guided.observer.overrides)
        _ = again.choose([task], step: 0)
        #expect(again.choose(HeldJob.choice(of: 3), step: 1) == 2)
        // With no override, the first value.
        var plain = Guided(overrides: [:])
        _ = plain.choose([task], step: 0)
        #expect(plain.choose(HeldJob.choice(of: 3), step: 1) == 0)
    }
}
