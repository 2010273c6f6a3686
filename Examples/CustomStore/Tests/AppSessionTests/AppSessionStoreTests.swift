import AppSession
import SessionBenchTesting
import Testing

/// The default `compare`'s in-process scenarios, shortened, on the app's store: a broken invariant
/// fails this test with its id, the events that broke it, and the `swift test` command that runs
/// that scenario and seed again.
@Test func appStoreKeepsTheSessionContract() async {
    await SessionStoreCheck().expectCorrect(AppSessionStore.descriptor)
}
