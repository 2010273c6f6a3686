import SessionBenchCLI
import SessionBenchSelfTest
import SessionStorage
import SessionStoragePostgres

#if HTTP
    import SessionBenchHTTP
    import SessionBench
#endif

// Before anything parses: the session processes of `replicas` resolve backends by name too.
#if PostgreSQL
    StorageBackendCatalog.register(PostgresBackends.all)
#else
    StorageBackendCatalog.leftOut(PostgresBackendNames.leftOut)
#endif

// The stores that check the tool itself (SessionBenchSelfTest), with
// `SESSION_BENCH_SELF_TEST_STORES=1` only. The measuring and exploring processes are this
// executable with this environment, so they have them too.
let selfTestStores = SelfTestStores.enabled ? SelfTestStores.all : []

// No top-level `await`: `explore`'s child processes install their executor before any task.
#if HTTP
    SessionBenchCommand.start(extraStores: selfTestStores, http: .live)
#else
    SessionBenchCommand.start(extraStores: selfTestStores)
#endif
