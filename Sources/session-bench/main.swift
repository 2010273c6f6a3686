import SessionBenchCLI

await SessionBenchCommand.main(arguments: Array(CommandLine.arguments.dropFirst()))
