import SessionBenchCLI

#if HTTP
import SessionBenchHTTP
import SessionBench

await SessionBenchCommand.main(arguments: Array(CommandLine.arguments.dropFirst()), http: .live)
#else
await SessionBenchCommand.main(arguments: Array(CommandLine.arguments.dropFirst()))
#endif
