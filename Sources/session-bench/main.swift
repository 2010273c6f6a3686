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

// No top-level `await`: `explore`'s child processes install their executor before any task.
SessionBenchCommand.start(http: .live)
#else
SessionBenchCommand.start()
#endif
