import AppSession
import SessionBenchCLI

// The executable route: every scenario, storage and crashes included, beside the built-in stores.
// `start`, not `await main`: with no top-level await, `explore` can run this store on its
// controlled scheduler too.
SessionBenchCommand.start(extraStores: [AppSessionStore.descriptor, AppSessionStore.racy])
