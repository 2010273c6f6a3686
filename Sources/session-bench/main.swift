import SessionBenchCLI

#if PostgreSQL
import SessionStorage
import SessionStoragePostgres

// Before anything parses: the session processes of `replicas` resolve backends by name too.
StorageBackendCatalog.register(PostgresBackends.all)
#endif

#if HTTP
import SessionBenchHTTP
import SessionBench

await SessionBenchCommand.main(arguments: Array(CommandLine.arguments.dropFirst()), http: .live)
#else
await SessionBenchCommand.main(arguments: Array(CommandLine.arguments.dropFirst()))
#endif
