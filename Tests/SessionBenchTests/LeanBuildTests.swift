import Foundation
import SessionBench
import SessionContract
import SessionStorage
import SessionStoragePostgres
import Testing

@testable import SessionBenchCLI

/// What a build says about the parts it was built without, and what `list` says a store declares.
@Suite("Traits: what a build has, and says it lacks")
struct LeanBuildTests {
    @Test("a store's declared capability is in its list line")
    func listShowsDeclaredCapability() {
        let declared = StoreDescriptor(
            name: "says-so", summary: "refreshes on any 401", refreshesUnconditionallyOn401: true
        ) { OverEagerRejectionStore(configuration: $0) }
        let plain = OverEagerRejectionStore.descriptor("quiet")
        let lines = List.lines(stores: [declared, plain])
        let line = lines.first { $0.contains("says-so") }
        #expect(line?.contains("declares: unconditional 401 refresh, I6 expected") == true, "\(lines)")
        #expect(lines.first { $0.contains("quiet") }?.contains("declares") == false)
    }

    #if Storage
        @Test("with the Storage trait the sealed and SQLite backends resolve, and list says nothing is left out of them")
        func storageBackendsBuilt() throws {
            #expect(try ScenarioCatalog.resolved("crash-restart:sqlite").map(\.storage) == ["sqlite"])
            #expect(!List.lines(stores: []).contains { $0.contains("encrypted-file") && $0.contains("left out") })
        }
    #else
        @Test("without the Storage trait, asking for a sealed or SQLite backend says in one line which trait brings it")
        func storageBackendLeftOut() {
            #expect(throws: ScenarioError.self) { try ScenarioCatalog.resolved("crash-restart:sqlite") }
            do {
                _ = try ScenarioCatalog.resolved("shared-storage:encrypted-file")
            } catch {
                #expect(!error.description.contains("\n"))
                #expect(error.description.contains("needs the Storage trait"), "\(error)")
                #expect(error.description.contains("--traits Storage"), "\(error)")
            }
            // The default scenarios need none of it.
            #expect(ScenarioCatalog.defaults.allSatisfy { $0.storage == nil || $0.storage == "json-file" })
            let listed = List.lines(stores: [])
            #expect(listed.contains { $0.contains("sqlite") && $0.contains("needs the Storage trait") }, "\(listed)")
        }
    #endif

    #if !HTTP
        @Test("without the HTTP trait, --transport http and serve say which trait brings them")
        func httpLeftOut() async throws {
            for arguments in [["compare", "--stores", "mutex", "--scenario", "expiry-storm", "--transport", "http"], ["serve"]] {
                let run = try await ToolProcess.run(arguments)
                #expect(run.status == 2, "\(arguments): \(run.stdout)\(run.stderr)")
                #expect(run.stderr.contains("needs the HTTP trait") && run.stderr.contains("--traits HTTP"), "\(run.stderr)")
            }
        }
    #endif

    #if !PostgreSQL
        @Test("list prints every backend's name whole, those left out too: each is a name a scenario takes")
        func listNamesLeftOutBackendsWhole() async throws {
            let run = try await ToolProcess.run(["list"])
            #expect(run.status == 0, "\(run.stderr)")
            let lines = run.stdout.split(separator: "\n").map(String.init)
            let backends = lines.drop { !$0.hasPrefix("storage backends") }.dropFirst()
            let names = backends.compactMap { $0.split(separator: " ").first.map(String.init) }
            let leftOut = PostgresBackendNames.leftOut.map(\.name)
            let known = Set(StorageBackendCatalog.all.map(\.name) + StorageBackendCatalog.leftOut.map(\.name) + leftOut)
            #expect(!names.isEmpty && names.allSatisfy(known.contains), "names list printed: \(names)")
            #expect(leftOut.allSatisfy(names.contains), "names list printed: \(names)")
        }

        @Test("without the PostgreSQL trait, replicas say which trait brings their backends")
        func replicasLeftOut() async throws {
            let run = try await ToolProcess.run(["compare", "--stores", "mutex", "--scenario", "replicas"])
            #expect(run.status == 2, "\(run.stdout)\(run.stderr)")
            #expect(run.stderr.contains("needs the PostgreSQL trait"), "\(run.stderr)")
            #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
        }
    #endif
}
