import Foundation
import PackagePlugin

/// `swift package session-bench <command> …`: builds the executable that runs session-bench's
/// command line in this package (one whose target hands its stores to
/// `SessionBenchCommand.start(extraStores:)`), or session-bench's own `session-bench` when there is
/// none, and runs it with the arguments the plugin does not take itself.
@main
struct SessionBenchPlugin: CommandPlugin {
    static let usage = """
        OVERVIEW: Build and run session-bench's command line in this package, with its own stores.

        USAGE: swift package session-bench [--debug] [--product <name>] <command> [<arguments> …]

        Runs the executable product of this package whose targets depend on SessionBenchCLI (it calls
        SessionBenchCommand.start(extraStores:)), or session-bench's own session-bench, built-in stores
        only, when there is none. Every other argument goes to it: `swift package session-bench --help`
        is its help.

        OPTIONS:
          --debug             Build it in debug (default: release, as benchmarks need).
          --product <name>    The executable to run when several here run session-bench's command line
                              (session-bench: the built-in one).
          --plugin-help       Show this help.

        SwiftPM passes a plugin's output through its own, and exits 1 whenever the command does not
        exit 0, naming the command's exit status. On macOS, SwiftPM's plugin sandbox (no writes outside
        temporary folders, no network) holds the command too: swift package --disable-sandbox session-bench …
        """

    func performCommand(context: PluginContext, arguments: [String]) async throws {
        let options = try Options(arguments)
        let streams = Streams()
        if options.help {
            streams.output.write(Data((Self.usage + "\n").utf8))
            return
        }
        guard let bench = Self.sessionBench(from: context.package) else {
            throw Failure("no package here or among its dependencies has session-bench's SessionBenchCLI product")
        }
        let candidates = Self.executables(in: context.package, runningCLIOf: bench).map(\.name).sorted()
        let product: String
        if let chosen = options.product {
            guard candidates.contains(chosen) || chosen == Self.builtIn else {
                throw Failure(
                    "--product \(chosen): no executable product here runs SessionBenchCommand"
                        + " (\(candidates.isEmpty ? "none does" : candidates.joined(separator: ", ")); or \(Self.builtIn))"
                )
            }
            product = chosen
        } else if candidates.count == 1 {
            product = candidates[0]
        } else if candidates.isEmpty {
            product = Self.builtIn
            streams.note(
                "note: no executable here runs SessionBenchCommand, so this is session-bench's own, built-in stores"
                    + " only; for your stores, an executable target that calls"
                    + " SessionBenchCommand.start(extraStores:) (session-bench's README, \"Your own store\")")
        } else {
            throw Failure(
                "several executables here run SessionBenchCommand (\(candidates.joined(separator: ", "))):"
                    + " choose one with --product NAME")
        }

        let configuration: PackageManager.BuildConfiguration = options.debug ? .debug : .release
        if !options.quiet { streams.note("building \(product) (\(configuration.rawValue))…") }
        let build = try packageManager.build(
            .product(product), parameters: .init(configuration: configuration, logging: .concise))
        guard build.succeeded else {
            let tail = build.logText.split(separator: "\n", omittingEmptySubsequences: false).suffix(40)
            streams.note(tail.joined(separator: "\n"))
            throw Failure("building \(product) (\(configuration.rawValue)) failed; the end of its log is above")
        }
        guard
            let executable = build.builtArtifacts.first(where: {
                $0.kind == .executable && $0.url.lastPathComponent == product
            })
        else {
            throw Failure("the build of \(product) succeeded but named no executable \(product)")
        }

        let status = try await Self.run(executable.url, options.forwarded, streams)
        if status != 0 { exit(status) }
    }

    /// session-bench's own executable: the built-in stores only.
    static let builtIn = "session-bench"

    /// The package, this one or a dependency however deep, that vends SessionBenchCLI.
    static func sessionBench(from root: Package) -> Package? {
        var queue = [root]
        var seen = Set<Package.ID>()
        while !queue.isEmpty {
            let package = queue.removeFirst()
            guard seen.insert(package.id).inserted else { continue }
            if package.products.contains(where: { $0.name == "SessionBenchCLI" && $0 is LibraryProduct }) {
                return package
            }
            queue += package.dependencies.map(\.package)
        }
        return nil
    }

    /// The executable products of `package` whose targets depend on SessionBenchCLI, directly or
    /// through the package's own targets.
    static func executables(in package: Package, runningCLIOf bench: Package) -> [ExecutableProduct] {
        guard let cli = bench.products.first(where: { $0.name == "SessionBenchCLI" }) else { return [] }
        let cliTargets = Set(cli.targets.map(\.id))
        let own = Set(package.targets.map(\.id))
        func reaches(_ dependency: TargetDependency, _ seen: inout Set<Target.ID>) -> Bool {
            switch dependency {
            case .product(let product):
                return product.id == cli.id || product.targets.contains { cliTargets.contains($0.id) }
            case .target(let target):
                if cliTargets.contains(target.id) { return true }
                guard own.contains(target.id), seen.insert(target.id).inserted else { return false }
                return target.dependencies.contains { reaches($0, &seen) }
            @unknown default:
                return false
            }
        }
        return package.products(ofType: ExecutableProduct.self).filter { product in
            var seen = Set<Target.ID>()
            return product.targets.contains { reaches(.target($0), &seen) }
        }
    }

    /// Runs `executable`, its input empty, its output on `streams`; SIGINT, SIGTERM and SIGHUP
    /// (SwiftPM sends the plugin SIGINT on Ctrl-C) are passed on to it, and the plugin waits for
    /// it to clean up. Its exit status, or 128 + the signal that ended it.
    static func run(_ executable: URL, _ arguments: [String], _ streams: Streams) async throws -> Int32 {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = streams.output
        process.standardError = streams.error
        let signals = [SIGINT, SIGTERM, SIGHUP].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { if process.isRunning { kill(process.processIdentifier, number) } }
            source.resume()
            return source
        }
        defer { for source in signals { source.cancel() } }
        return try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { process in
                let status = process.terminationStatus
                continuation.resume(returning: process.terminationReason == .uncaughtSignal ? 128 + status : status)
            }
            do { try process.run() } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: Failure("cannot run \(executable.path): \(error)"))
            }
        }
    }
}

/// The plugin's own options, taken out of the arguments before the first `--`; everything else,
/// in order, is the command's.
struct Options {
    var debug = false
    var product: String?
    var help = false
    var forwarded: [String] = []
    /// The command's `--quiet`: no line from the plugin either.
    var quiet: Bool { forwarded.prefix { $0 != "--" }.contains("--quiet") }

    init(_ arguments: [String]) throws {
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--":
                forwarded += [argument] + rest
                return
            case "--debug": debug = true
            case "--plugin-help": help = true
            case "--product":
                guard let name = rest.popFirst() else { throw Failure("--product needs an executable's name") }
                product = name
            case _ where argument.hasPrefix("--product="): product = String(argument.dropFirst("--product=".count))
            default: forwarded.append(argument)
            }
        }
    }
}

/// Where the command's output goes. SwiftPM reads a command plugin's standard output and error
/// through one pipe onto its own standard output, and holds it until the plugin ends unless that
/// is a terminal. On Linux, where SwiftPM runs the plugin as its child and unsandboxed, the
/// command writes straight to SwiftPM's own standard output and error when those are terminals or
/// pipes (never a file: SwiftPM's own later writes to it would land over the command's); anywhere
/// else, through the plugin's.
struct Streams {
    let output: FileHandle
    let error: FileHandle

    init() {
        output = Self.parents(STDOUT_FILENO) ?? .standardOutput
        error = Self.parents(STDERR_FILENO) ?? .standardError
    }

    func note(_ line: String) { error.write(Data((line + "\n").utf8)) }

    static func parents(_ descriptor: Int32) -> FileHandle? {
        #if os(Linux)
            let parent = "/proc/\(getppid())"
            guard let program = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(parent)/exe"),
                URL(fileURLWithPath: program).lastPathComponent.hasPrefix("swift")
            else { return nil }
            let path = "\(parent)/fd/\(descriptor)"
            var status = stat()
            guard stat(path, &status) == 0, [S_IFIFO, S_IFCHR].contains(status.st_mode & S_IFMT) else { return nil }
            let opened = open(path, O_WRONLY | O_CLOEXEC)
            return opened < 0 ? nil : FileHandle(fileDescriptor: opened, closeOnDealloc: true)
        #else
            return nil
        #endif
    }
}

struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
