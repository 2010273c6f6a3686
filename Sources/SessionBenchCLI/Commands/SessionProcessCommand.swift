import ArgumentParser
import SessionBench

/// A process that `crash-restart` kills and starts again. Not for people: reads a plan on
/// standard input and talks to its driver over its pipes.
struct SessionProcessCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "session-process",
        abstract: "Run one store over storage until killed (used internally by crash-restart).",
        shouldDisplay: false)

    mutating func run() async throws {
        Lifeline.watch()
        await SessionProcess.main(
            store: { StoreRegistry.named($0) }, network: HTTPAvailability.current?.transport as? any NetworkTransport)
    }
}
