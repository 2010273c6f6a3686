import Foundation
import Testing

/// The folders of one module depend on each other one way, as targets do (the compiler sees to
/// that for targets; this test sees to it for folders). A folder depends on another when one of
/// its files names a type declared at the top level of the other's files. Layers of
/// `SessionBench`, bottom up: Scenarios; Results; Storage, Gate, Drivers; ChildProcess;
/// Runner; the families (Storms, Steady, StepUp, SessionStates, CrashRestart, SharedStorage);
/// Families (which runs each kind); Explore; Reports.
@Suite struct FolderDependencyTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// A Swift file: the folder under its module it sits in (the module's own name for a file at
    /// its top), and its text.
    struct File {
        let folder: String
        let text: String
    }

    /// One folder's dependence on another, and the type names that make it.
    struct Edge: Hashable, CustomStringConvertible {
        let from: String
        let to: String
        let names: [String]
        var description: String { "\(from) → \(to) (\(names.prefix(4).joined(separator: ", ")))" }
    }

    /// A type, protocol or alias declared at the top level of a file, where other files can see it
    /// (`private` and `fileprivate` ones cannot, so they are left out).
    static var declaration: Regex<AnyRegexOutput> {
        try! Regex(
            #"^(?:@\w+(?:\([^)\n]*\))?\s+)*(?:(?:public|package|internal|final|nonisolated|indirect)\s+)*(?:struct|enum|class|actor|protocol|typealias)\s+([A-Z]\w*)"#
        ).anchorsMatchLineEndings()
    }

    static func files(module: String) throws -> [File] {
        let folder = root.appendingPathComponent("Sources/\(module)")
        var files: [File] = []
        let walk = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)
        while let url = walk?.nextObject() as? URL {
            guard url.pathExtension == "swift" else { continue }
            let relative = url.path.dropFirst(folder.path.count + 1).split(separator: "/")
            files.append(
                File(
                    folder: relative.count > 1 ? String(relative[0]) : module,
                    text: try String(contentsOf: url, encoding: .utf8)))
        }
        return files
    }

    /// Every dependence between folders of `files`.
    static func edges(_ files: [File]) -> [Edge] {
        var owner: [String: String] = [:]
        for file in files {
            for match in file.text.matches(of: declaration) {
                if let name = match.output[1].substring { owner[String(name)] = file.folder }
            }
        }
        var uses: [String: [String: Set<String>]] = [:]
        for file in files {
            // Comments and strings name types without using them (``StarvationWatch`` in a doc
            // comment, "Compare with a saved baseline" in help text).
            let code = file.text.replacing(/"""[\s\S]*?"""/, with: "\"\"")
                .split(separator: "\n", omittingEmptySubsequences: false)
                .map { line in
                    let code = line.range(of: "//").map { line[..<$0.lowerBound] } ?? line[...]
                    return code.replacing(/"(?:[^"\\\n]|\\.)*"/, with: "\"\"")
                }
                .joined(separator: "\n")
            // Simple word boundaries: Unicode's would read `Format.rate` as one word.
            for word in code.matches(of: /\b[A-Z]\w*\b/.wordBoundaryKind(.simple)) {
                let name = String(word.output)
                guard let folder = owner[name], folder != file.folder else { continue }
                uses[file.folder, default: [:]][folder, default: []].insert(name)
            }
        }
        return uses.flatMap { from, targets in targets.map { Edge(from: from, to: $0.key, names: $0.value.sorted()) } }
            .sorted { ($0.from, $0.to) < ($1.from, $1.to) }
    }

    /// The edges that lie on a cycle: from a folder that the folder it depends on reaches back.
    static func cycles(_ edges: [Edge]) -> [Edge] {
        let next = Dictionary(grouping: edges, by: \.from).mapValues { $0.map(\.to) }
        func reaches(_ start: String, _ goal: String) -> Bool {
            var seen: Set<String> = [start]
            var queue = [start]
            while let folder = queue.popLast() {
                if folder == goal { return true }
                for other in next[folder] ?? [] where seen.insert(other).inserted { queue.append(other) }
            }
            return false
        }
        return edges.filter { reaches($0.to, $0.from) }
    }

    @Test("SessionBench's folders depend on each other one way")
    func harnessFoldersHaveNoCycle() throws {
        let files = try Self.files(module: "SessionBench")
        let edges = Self.edges(files)
        // The analysis sees the harness's real structure: the families drive through the shared
        // drivers and hand a result up.
        #expect(Set(files.map(\.folder)).count >= 12, "read \(Set(files.map(\.folder)).count) folders")
        #expect(edges.contains { $0.from == "Storms" && $0.to == "Drivers" }, "\(edges)")
        #expect(edges.contains { $0.from == "Reports" && $0.to == "Results" }, "\(edges)")
        let cycles = Self.cycles(edges)
        #expect(
            cycles.isEmpty, "folders that depend on each other: \(cycles.map(\.description).joined(separator: "; "))")
    }

    @Test("SessionBenchCLI's folders depend on each other one way")
    func commandLineFoldersHaveNoCycle() throws {
        // Bottom up: the module's own top-level files (output, logging, the process guard, the
        // store registry, exit statuses); Options; Isolation (the measuring processes and
        // `Execution`, which runs stores through them); Commands.
        let files = try Self.files(module: "SessionBenchCLI")
        let edges = Self.edges(files)
        #expect(Set(files.map(\.folder)) == ["SessionBenchCLI", "Options", "Isolation", "Commands"])
        #expect(edges.contains { $0.from == "Commands" && $0.to == "Options" }, "\(edges)")
        #expect(edges.contains { $0.from == "Isolation" && $0.to == "SessionBenchCLI" }, "\(edges)")
        let cycles = Self.cycles(edges)
        #expect(
            cycles.isEmpty, "folders that depend on each other: \(cycles.map(\.description).joined(separator: "; "))")
    }

    @Test("two folders that name each other's types are a cycle; a chain is not")
    func cycleFound() {
        let files = [
            File(folder: "A", text: "struct Alpha { var beta: Beta }\nprivate enum Hidden {}"),
            File(
                folder: "B",
                text:
                    "public struct Beta {\n    // Gamma in a comment is no use\n    static func make() -> Beta { Beta() }\n    var alpha: Alpha?\n}"
            ),
            File(folder: "C", text: "final class Gamma { let beta = Beta.make(); let hidden: Hidden? = nil }"),
            File(
                folder: "D",
                text: "let help = \"Alpha in a string\"\nlet more = \"\"\"\n    Gamma in a block\n    \"\"\""),
        ]
        let edges = Self.edges(files)
        #expect(edges.map(\.description) == ["A → B (Beta)", "B → A (Alpha)", "C → B (Beta)"])
        #expect(Self.cycles(edges).map(\.description) == ["A → B (Beta)", "B → A (Alpha)"])
        #expect(Self.cycles(edges.filter { $0.from != "B" }).isEmpty)
    }
}
