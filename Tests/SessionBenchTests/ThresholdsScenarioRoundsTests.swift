import Foundation
import Testing

@testable import SessionBench

/// A thresholds file's `run.scenario_rounds`: rounds for the scenarios named, in place of `run.rounds`.
@Suite("Thresholds: rounds per scenario")
struct ThresholdsScenarioRoundsTests {
    static func parse(_ run: String) throws -> Thresholds {
        try Thresholds.parse(
            Data("{ \"version\": 1, \"run\": { \(run) }, \"limits\": [] }".utf8), path: "t.json", knownStores: ["mutex"]
        )
    }

    @Test("the rounds are read per scenario, beside the run's own")
    func read() throws {
        let thresholds = try Self.parse(#""rounds": 20, "scenario_rounds": { "scale-storm": 1, "family": 3 }"#)
        #expect(thresholds.run.rounds == 20)
        #expect(thresholds.run.scenarioRounds == ["scale-storm": 1, "family": 3])
    }

    @Test(
        "a name that is no round-based scenario of the run, or rounds out of range, is refused with its key",
        arguments: [
            (#""scenario_rounds": { "scale-stor": 1 }"#, "run.scenario_rounds.scale-stor", "unknown scenario"),
            (#""scenario_rounds": { "steady-reads": 1 }"#, "run.scenario_rounds.steady-reads", "not rounds"),
            (
                #""scenarios": ["expiry-storm"], "scenario_rounds": { "scale-storm": 1 }"#,
                "run.scenario_rounds.scale-storm", "not among run.scenarios"
            ),
            (#""scenario_rounds": { "scale-storm": 0 }"#, "run.scenario_rounds.scale-storm", "must be"),
            (#""scenario_rounds": { "scale-storm": 1.5 }"#, "run.scenario_rounds.scale-storm", "whole"),
            (#""scenario_rounds": 1"#, "run.scenario_rounds", "must be an object"),
        ])
    func refused(run: String, key: String, problem: String) throws {
        #expect {
            _ = try Self.parse(run)
        } throws: { error in
            guard let error = error as? ThresholdsError else { return false }
            return error.key == key && error.problem.contains(problem)
        }
    }

    @Test("--update writes them back as they were read")
    func updated() throws {
        let thresholds = try Self.parse(#""rounds": 20, "scenario_rounds": { "scale-storm": 1, "family": 3 }"#)
        let text = thresholds.json()
        #expect(text.contains(#""scenario_rounds": { "family": 3, "scale-storm": 1 }"#), "\(text)")
        let again = try Thresholds.parse(Data(text.utf8), path: "t.json", knownStores: ["mutex"])
        #expect(again.run == thresholds.run)
    }

    @Test("check runs each named scenario with its own rounds and the others with the run's")
    func applied() async throws {
        let cli = CommandLineTests()
        let directory = try cli.temporaryDirectory()
        let path = directory.appendingPathComponent("thresholds.json").path
        try Data(
            #"""
            { "version": 1, "run": { "stores": ["mutex"], "scenarios": ["expiry-storm", "scale-storm"], "rounds": 20,
              "scenario_rounds": { "scale-storm": 1 } }, "limits": [] }
            """#.utf8
        ).write(to: URL(fileURLWithPath: path))
        let run = try await cli.run(["check", "--thresholds", path, "--dry-run"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let text = run.stdout + run.stderr
        #expect(text.contains("expiry-storm: 64 callers, 20 rounds"), "\(text)")
        #expect(text.contains("scale-storm: 100000 callers, 1 round,"), "\(text)")
    }
}
