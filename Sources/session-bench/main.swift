import SessionBenchCLI

import SessionStorage
import SessionStoragePostgres

// Before anything parses: the session processes of `replicas` resolve backends by name too.
#if PostgreSQL
StorageBackendCatalog.register(PostgresBackends.all)
#else
StorageBackendCatalog.leftOut(PostgresBackendNames.leftOut)
#endif

#if HTTP
import SessionBenchHTTP
import SessionBench

// No top-level `await`: `explore`'s child processes install their executor before any task.
SessionBenchCommand.start(http: .live)
#else
SessionBenchCommand.start()
#endif
