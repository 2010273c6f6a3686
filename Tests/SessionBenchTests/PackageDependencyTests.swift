import Foundation
import Testing

/// Package.swift's dependency lines say what each module uses: every target declares exactly
/// the modules its files import (besides the system's). With `MemberImportVisibility` on, a
/// file cannot use a module it does not import, so the imports are the truth this compares to.
@Suite struct PackageDependencyTests {
    /// Modules of the toolchain and the system, never declared as dependencies.
    static let system: Set<String> = [
        "Foundation", "FoundationEssentials", "Glibc", "Darwin", "Musl", "Synchronization", "Dispatch", "Testing",
        "XCTest", "_Concurrency",
        // Dispatch's C module: with SwiftNIO in the build, `struct stat`'s members resolve to it.
        "CDispatch",
        // Foundation's XML parser on Linux: the JUnit export's schema check reads with it.
        "FoundationXML",
    ]

    static let accessLevels: Set<Substring> = ["public", "package", "internal", "fileprivate", "private"]

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    struct Target: Decodable {
        let name: String
        let type: String
        let path: String?
        let dependencies: [[String: [JSONValue?]]]

        /// The names of the targets and products this target depends on.
        var declared: Set<String> {
            Set(dependencies.compactMap { $0.values.first?.first??.string })
        }

        var folder: String { path ?? (type == "test" ? "Tests/\(name)" : "Sources/\(name)") }
    }

    struct Manifest: Decodable { let targets: [Target] }

    /// Enough of JSON to read a dependency's name out of `dump-package`'s arrays.
    enum JSONValue: Decodable {
        case string(String)
        case other

        init(from decoder: Decoder) throws {
            let container = try decoder.singleValueContainer()
            self = (try? container.decode(String.self)).map(JSONValue.string) ?? .other
        }

        var string: String? { if case .string(let value) = self { value } else { nil } }
    }

    static func manifest() throws -> Manifest {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // A scratch path of its own: `swift test` holds the lock on `.build` while tests run.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("session-bench-manifest-\(getpid())")
        defer { try? FileManager.default.removeItem(at: scratch) }
        process.arguments = ["swift", "package", "--package-path", root.path, "--scratch-path", scratch.path, "dump-package"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "swift package dump-package failed")
        return try JSONDecoder().decode(Manifest.self, from: data)
    }

    /// The modules the Swift files under `folder` import.
    static func imports(under folder: URL) -> Set<String> {
        var modules = Set<String>()
        let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)
        while let file = files?.nextObject() as? URL {
            guard file.pathExtension == "swift", let text = try? String(contentsOf: file, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n") {
                // `@preconcurrency import X`, `internal import X`: the module is the last word.
                let words = line.split(separator: " ").filter { !$0.hasPrefix("@") && !Self.accessLevels.contains($0) }
                guard words.count == 2, words[0] == "import" else { continue }
                modules.insert(String(words[1]))
            }
        }
        return modules.subtracting(system)
    }

    @Test func everyTargetDeclaresWhatItImports() throws {
        let targets = try Self.manifest().targets
        #expect(targets.count >= 10, "read \(targets.count) targets from Package.swift")
        var compared = 0
        for target in targets {
            let folder = Self.root.appendingPathComponent(target.folder)
            let imported = Self.imports(under: folder)
            // C targets import nothing; their headers are what they declare.
            let hasSwift = FileManager.default.enumerator(atPath: folder.path)?.contains { ($0 as? String)?.hasSuffix(".swift") == true }
            guard hasSwift == true else { continue }
            compared += 1
            let undeclared = imported.subtracting(target.declared).sorted()
            let unused = target.declared.subtracting(imported).sorted()
            #expect(undeclared.isEmpty, "\(target.name) imports \(undeclared) without declaring it in Package.swift")
            #expect(unused.isEmpty, "\(target.name) declares \(unused) in Package.swift but no file imports it")
        }
        #expect(compared >= 10, "compared \(compared) Swift targets")
    }
}
