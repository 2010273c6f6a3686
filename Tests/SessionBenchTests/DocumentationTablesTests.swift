import Foundation
import SessionBench
import Testing

/// The documentation against the code: each table generated from a catalog (scenarios, invariants,
/// CSV columns) as the catalog renders it today, and every relative link pointing at something
/// that exists. `SESSION_BENCH_REGENERATE_DOCS=1` writes the tables into the pages instead.
@Suite("Documentation", .serialized)
struct DocumentationTablesTests {
    static let root = CommandLineTests.packageRoot
    static let regenerate = ProcessInfo.processInfo.environment["SESSION_BENCH_REGENERATE_DOCS"] == "1"
    static let howToRegenerate = "SESSION_BENCH_REGENERATE_DOCS=1 swift test --filter DocumentationTables"

    @Test(
        "each generated table in docs/ matches the catalog it is generated from",
        arguments: DocumentationTables.all.map { $0.name })
    func generatedTable(name: String) throws {
        let block = try #require(DocumentationTables.all.first { $0.name == name })
        let page = block.page
        let url = Self.root.appendingPathComponent(page)
        var text = try String(contentsOf: url, encoding: .utf8)
        let render = block.text
        let expected = render() + "\n"
        let range = try #require(
            Self.generatedRange(name, in: text),
            "\(page) has no block '<!-- generated: \(name) -->' … '<!-- end generated -->' (each on a line of its own)")
        if Self.regenerate {
            guard text[range] != expected else { return }
            text.replaceSubrange(range, with: expected)
            try text.write(to: url, atomically: true, encoding: .utf8)
            return
        }
        #expect(
            String(text[range]) == expected,
            """
            \(page): the generated table '\(name)' differs from the code it is generated from. Edit the catalog \
            (not the page), then regenerate the page with: \(Self.howToRegenerate)
            """)
    }

    /// The text between a block's start marker line and its end marker line.
    static func generatedRange(_ name: String, in text: String) -> Range<String.Index>? {
        guard let start = text.range(of: "<!-- generated: \(name) -->\n"),
            let end = text.range(of: "<!-- end generated -->", range: start.upperBound..<text.endIndex),
            end.lowerBound == text.startIndex || text[text.index(before: end.lowerBound)] == "\n"
        else { return nil }
        return start.upperBound..<end.lowerBound
    }

    /// README.md, every page under docs/ and results/FINDINGS.md.
    static func documentationFiles() throws -> [URL] {
        let docs = root.appendingPathComponent("docs")
        let pages = try FileManager.default.contentsOfDirectory(atPath: docs.path).filter { $0.hasSuffix(".md") }
            .sorted()
        return [root.appendingPathComponent("README.md")] + pages.map { docs.appendingPathComponent($0) }
            + [root.appendingPathComponent("results/FINDINGS.md")]
    }

    @Test("every relative link in README and docs resolves")
    func relativeLinksResolve() throws {
        var broken: [String] = []
        for file in try Self.documentationFiles() {
            let text = try String(contentsOf: file, encoding: .utf8)
            let name = String(file.path.dropFirst(Self.root.path.count + 1))
            for target in MarkdownLinks.links(in: text) where !target.contains("://") && !target.hasPrefix("mailto:") {
                let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(
                    String.init)
                let path = parts[0].removingPercentEncoding ?? parts[0]
                let resolved =
                    path.isEmpty
                    ? file : file.deletingLastPathComponent().appendingPathComponent(path).standardizedFileURL
                guard FileManager.default.fileExists(atPath: resolved.path) else {
                    broken.append("\(name): \(target) (no file \(resolved.path))")
                    continue
                }
                guard parts.count == 2, resolved.pathExtension == "md" else { continue }
                let anchors = MarkdownLinks.anchors(in: try String(contentsOf: resolved, encoding: .utf8))
                if !anchors.contains(parts[1]) { broken.append("\(name): \(target) (no heading with that anchor)") }
            }
        }
        #expect(broken.isEmpty, "links that go nowhere:\n\(broken.joined(separator: "\n"))")
    }

    @Test("the README links every page under docs/ and the findings")
    func readmeLinksEveryPage() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let linked = Set(MarkdownLinks.links(in: readme).map { $0.split(separator: "#").first.map(String.init) ?? $0 })
        let pages = try Self.documentationFiles().dropFirst().map {
            String($0.path.dropFirst(Self.root.path.count + 1))
        }
        let missing = pages.filter { !linked.contains($0) }
        #expect(missing.isEmpty, "README.md's Documentation list leaves out: \(missing.joined(separator: ", "))")
    }

    @Test("the link checker reads links and headings as GitHub renders them")
    func linkCheckerReadsMarkdown() {
        let text = """
            # Over HTTP: `serve` and `--transport http`
            See [it](#over-http-serve-and---transport-http), ![chart](charts/a.png) and [a page](docs/x.md#part).
            `[not a link](nowhere.md)`
            ```sh
            # not a heading [nor a link](nowhere.md)
            ```
            ## Tokens at rest: storage, crashes and restarts
            ## Tokens at rest: storage, crashes and restarts
            """
        #expect(
            MarkdownLinks.links(in: text) == [
                "#over-http-serve-and---transport-http", "charts/a.png", "docs/x.md#part",
            ])
        #expect(
            MarkdownLinks.anchors(in: text) == [
                "over-http-serve-and---transport-http", "tokens-at-rest-storage-crashes-and-restarts",
                "tokens-at-rest-storage-crashes-and-restarts-1",
            ])
    }
}

/// What the link check needs of Markdown: the targets of inline links and images outside code, and
/// the anchors GitHub gives headings.
enum MarkdownLinks {
    /// Lines outside fenced code blocks.
    static func prose(_ text: String) -> [Substring] {
        var inFence = false
        var lines: [Substring] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                inFence.toggle()
            } else if !inFence {
                lines.append(line)
            }
        }
        return lines
    }

    /// A line without its code spans.
    static func withoutCode(_ line: Substring) -> String {
        line.replacingOccurrences(of: "`[^`]*`", with: "", options: .regularExpression)
    }

    /// The targets of `[text](target)` and `![alt](target)`, in order.
    static func links(in text: String) -> [String] {
        let pattern = try! NSRegularExpression(pattern: #"\]\(([^)\s]+)(?:\s+"[^"]*")?\)"#)
        return prose(text).flatMap { line -> [String] in
            let line = withoutCode(line)
            let range = NSRange(line.startIndex..., in: line)
            return pattern.matches(in: line, range: range).compactMap { match in
                Range(match.range(at: 1), in: line).map { String(line[$0]) }
            }
        }
    }

    /// The anchors of the headings, as GitHub makes them: the heading's text in lower case, without
    /// punctuation other than `-` and `_`, spaces as `-`; a repeated one gets `-1`, `-2`, ….
    static func anchors(in text: String) -> [String] {
        var seen: [String: Int] = [:]
        return prose(text).compactMap { line -> String? in
            guard line.hasPrefix("#") else { return nil }
            let title = line.drop { $0 == "#" }
            guard title.first == " " else { return nil }
            let slug = String(
                title.trimmingCharacters(in: .whitespaces).lowercased().unicodeScalars.compactMap {
                    scalar -> Character? in
                    if scalar == " " { return "-" }
                    if scalar == "-" || scalar == "_" || CharacterSet.alphanumerics.contains(scalar) {
                        return Character(scalar)
                    }
                    return nil
                })
            let count = seen[slug, default: 0]
            seen[slug] = count + 1
            return count == 0 ? slug : "\(slug)-\(count)"
        }
    }
}
