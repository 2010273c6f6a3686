import ArgumentParser
import Foundation
import SessionBench
import SessionContract

/// `session-bench`: which way of guarding a session's tokens is correct, and what it costs.
public struct SessionBenchCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "session-bench",
        abstract: "Check session-token stores for concurrency bugs and measure what each costs.",
        discussion: exitStatusHelp,
        subcommands: [
            Compare.self, List.self, Sweep.self, Stress.self, Check.self, Explore.self, Report.self, Serve.self, RunStore.self,
            SessionProcessCommand.self, ExploreRunCommand.self,
        ],
        defaultSubcommand: Compare.self
    )

    public init() {}

    /// Runs the command line with the built-in stores plus `extraStores` (for a user's own
    /// package), and exits with the documented status.
    /// `http` brings `serve` and `--transport http` (`LoopbackHTTP.live`, from the
    /// SessionBenchHTTP product); without it they say how to get them.
    public static func main(extraStores: [StoreDescriptor], http: LoopbackHTTP? = nil) async -> Never {
        StoreRegistry.register(extraStores)
        await main(arguments: Array(CommandLine.arguments.dropFirst()), http: http)
    }

    /// Runs the command line from a `main.swift` with no top-level `await`, and exits with the
    /// documented status. `explore`'s child processes need this entry: their controlled executor
    /// must be installed before any task exists, which an async `main` has already made.
    public static func start(extraStores: [StoreDescriptor] = [], http: LoopbackHTTP? = nil) -> Never {
        StandardDescriptors.reserve()
        StoreRegistry.register(extraStores)
        let arguments = Array(CommandLine.arguments.dropFirst())
        ExploreChild.runIfChild(arguments)
        Task { await main(arguments: arguments, http: http) }
        dispatchMain()
    }

    public static func main(arguments: [String], http: LoopbackHTTP? = nil) async -> Never {
        StandardDescriptors.reserve()
        if let http { HTTPAvailability.install(http) }
        ProcessGuard.install()
        do {
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            Foundation.exit(ExitStatus.success.rawValue)
        } catch {
            Foundation.exit(report(error))
        }
    }

    /// Prints `error` the way the tool promises (one line for bad input) and picks the status.
    static func report(_ error: Error) -> Int32 {
        let (status, text) = outcome(of: error)
        switch text {
        case .standardOutput(let help):
            // Help is an output too: a full disk or a closed pipe is an error, not a success.
            do throws(UsageError) { try OutputWriter.show(help + "\n") } catch { return report(error) }
        case .standardError(let line): Log.progress(line)
        case nil: break
        }
        return status
    }

    enum Text: Equatable {
        case standardOutput(String)
        case standardError(String)
    }

    /// The status an error ends the process with, and what is printed where.
    static func outcome(of error: Error) -> (status: Int32, text: Text?) {
        if let usage = error as? UsageError {
            return (
                ExitStatus.usage.rawValue,
                .standardError("session-bench: error: \(Printable.name(usage.description, limit: 600))")
            )
        }
        let code = exitCode(for: error)
        if code == .success {
            return (ExitStatus.success.rawValue, .standardOutput(fullMessage(for: error)))  // --help, --version
        }
        if let exit = error as? ExitCode { return (exit.rawValue, nil) }
        // One line, and what the user typed shown safely (a NUL or an escape sequence as \u{..}).
        let firstLine = message(for: error).split(separator: "\n").first.map(String.init) ?? "\(error)"
        let message = Printable.name(firstLine, limit: 600)
        let hint = message.contains("(see '") ? "" : " (see 'session-bench --help')"
        return (ExitStatus.usage.rawValue, .standardError("session-bench: error: \(message)\(hint)"))
    }
}
