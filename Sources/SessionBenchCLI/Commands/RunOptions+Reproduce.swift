import Foundation
import SessionBench
import SessionContract
import SessionMeasurement

extension RunOptions {
    /// The `compare` command that runs exactly this store × scenario again: the iteration's
    /// seed, crowd and rounds, and every other option of this run that changes what runs or how
    /// it is judged, as given. Only what `compare` has no use for is left out: the iterations and
    /// `--for` (stress's own loop), and where results go (`--format`, `--output`,
    /// `--append-output`, `--quiet`, `--dry-run`). `stress` prints it for each failure; `compare`'s
    /// HTML report shows it under each.
    func reproduce(_ store: StoreDescriptor, _ scenario: Scenario, expect: String?) -> String {
        let program = URL(fileURLWithPath: CommandLine.arguments.first ?? "session-bench").lastPathComponent
        var words = [
            program, "compare", "--stores", store.name, "--scenario", scenario.name, "--seed", "\(scenario.seed)",
            "--tasks", "\(scenario.tasks)",
        ]
        if scenario.isRoundBased {
            words += ["--rounds", "\(scenario.rounds)"]
        } else if let rounds {
            words += ["--rounds", "\(rounds)"]
        }
        if let duration { words += ["--duration", duration.text] }
        if let rate { words += ["--rate", Stress.argument(rate)] }
        if let replicas = scenario.replicas ?? replicas { words += ["--replicas", "\(replicas)"] }
        if let pace { words += ["--pace", pace.text] }
        if let syncThreads = scenario.syncThreads ?? syncThreads { words += ["--sync-threads", "\(syncThreads)"] }
        if let timeout = execution.hangTimeoutOption { words += ["--hang-timeout", Stress.argument(timeout)] }
        if store.isReferenceBroken || includeBroken { words.append("--include-broken") }
        if let cpus { words += ["--cpus", CPUPlacement.text(cpus)] }
        if let allocator { words += ["--allocator", allocator.rawValue] }
        if let counter = allocationCounter { words += ["--allocation-counter", counter.rawValue] }
        if execution.inProcess { words.append("--in-process") }
        if execution.transport != .inProcess { words += ["--transport", execution.transport.rawValue] }
        if let path = expect { words += ["--expect", path] }
        return words.map(ShellWord.quoted).joined(separator: " ")
    }
}
