import Testing

@testable import SessionBench
@testable import SessionBenchCLI

/// `explore --jobs`: what several processes of one store found, put together as one exploration.
@Suite("Explore: jobs merged")
struct ExploreJobsTests {
    static func outcome(schedules: Int, failingAt: Int? = nil, verdict: ScenarioResult.Verdict? = nil) -> ExploreChild.Outcome {
        ExploreChild.Outcome(
            schedules: schedules, steps: schedules * 10, seconds: 1, uncontrolledJobs: 0,
            schedule: failingAt.map { "sbx1:random:\($0):0" }, failingAt: failingAt, end: nil, violations: [],
            problem: verdict.map { "job \($0)" }, verdict: verdict)
    }

    @Test("the failure at the lowest schedule index is the one reported; every schedule run is counted")
    func lowestFailure() {
        let merged = ExploreChild.merged(
            [Self.outcome(schedules: 2, failingAt: 4), Self.outcome(schedules: 2, failingAt: 3), Self.outcome(schedules: 5)],
            seconds: 2.5)
        #expect(merged.failingAt == 3)
        #expect(merged.schedule == "sbx1:random:3:0")
        #expect(merged.schedules == 9 && merged.steps == 90)
        #expect(merged.seconds == 2.5, "the wall time of the jobs together, not the sum of theirs")
    }

    @Test("with no failure, a job that hung or crashed makes the store's verdict")
    func troubledJob() {
        let merged = ExploreChild.merged([Self.outcome(schedules: 7), Self.outcome(schedules: 0, verdict: .hung)], seconds: 1)
        #expect(merged.verdict == .hung && merged.problem == "job hung")
        #expect(merged.schedules == 7)
        let clean = ExploreChild.merged([Self.outcome(schedules: 3), Self.outcome(schedules: 4)], seconds: 1)
        #expect(clean.verdict == nil && clean.failingAt == nil && clean.schedules == 7)
    }
}
