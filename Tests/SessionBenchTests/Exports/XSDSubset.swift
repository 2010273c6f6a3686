import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// An XML Schema (XSD 1.0) validator for exactly the constructs of Jenkins xunit-plugin's junit-10.xsd.
///
/// The schema may hold top-level `element`s (with `type=` or an inline `complexType`), named and
/// inline `complexType`s (`mixed`, a `sequence` or `choice`, nested, with `minOccurs`/`maxOccurs`,
/// elements by `name`/`type` or by `ref`), `attribute`s (`name`, `type`, `use`), `simpleType`s
/// restricting `string` by `pattern`s, the built-in `string`, and `annotation`s (ignored). Anything
/// else makes `init` throw. A document is checked for: a declared root; children that match their
/// parent's content model; declared attributes only (`xmlns*` and `xsi:*` aside), required ones
/// present, pattern-typed ones matching the whole value; no text in an element that is neither mixed
/// nor simple; no child elements in a simple-typed element. Patterns are run by NSRegularExpression,
/// which reads the plain XSD regular expressions used here the same way.
struct XSDSubset {
    /// Why a schema could not be loaded or a document could not be read.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// An element's or attribute's type: the built-in `string`, a named simple type, or a complex type.
    enum TypeRef {
        case string
        case simple(String)
        case complex(String)
    }
    struct ElementDecl { let name: String, type: TypeRef }
    enum Term {
        case element(ElementDecl)
        case sequence([Particle])
        case choice([Particle])
    }
    /// A term with its occurrence bounds; `max` is nil for "unbounded".
    struct Particle { let term: Term, min: Int, max: Int? }
    struct AttributeDecl { let name: String, type: TypeRef, required: Bool }
    /// `content` is nil for an element that may hold no child elements.
    struct ComplexType { let mixed: Bool, content: Particle?, attributes: [String: AttributeDecl] }

    private let elements: [String: ElementDecl]
    private let complexTypes: [String: ComplexType]
    private let simpleTypes: [String: [NSRegularExpression]]

    /// Loads a schema; throws for XML that is not well formed and for any unsupported construct.
    init(xsd: Data) throws {
        var compiler = try Compiler(Self.parse(xsd, what: "the schema"))
        try compiler.compile()
        (elements, complexTypes, simpleTypes) = (compiler.elements, compiler.complexTypes, compiler.simpleTypes)
    }

    /// The ways `document` breaks the schema, each led by the element's path (`/a/b[2]`); empty when
    /// it conforms. Throws when `document` is not well-formed XML.
    func errors(in document: Data) throws -> [String] {
        let root = try Self.parse(document, what: "the document")
        guard let declaration = elements[root.name] else {
            return ["/\(root.name): the root element <\(root.name)> is not declared by the schema"]
        }
        var errors: [String] = []
        validate(root, as: declaration.type, at: "/\(root.name)", into: &errors)
        return errors
    }

    private func validate(_ node: Node, as type: TypeRef, at path: String, into errors: inout [String]) {
        guard case .complex(let key) = type else {
            checkAttributes(node, [:], at: path, into: &errors)
            if let child = node.children.first {
                errors.append("\(path): child element <\(child.name)> in an element of simple type")
            }
            if case .simple(let name) = type, !matches(node.text, name) {
                errors.append("\(path): text \"\(node.text)\" does not match the pattern of \(name)")
            }
            return
        }
        guard let complex = complexTypes[key] else { return errors.append("\(path): unknown type \(key)") }
        checkAttributes(node, complex.attributes, at: path, into: &errors)
        if !complex.mixed, node.text.unicodeScalars.contains(where: { !" \t\r\n".unicodeScalars.contains($0) }) {
            errors.append("\(path): text content in an element that is not mixed")
        }
        let names = node.children.map(\.name)
        var assigned: [ElementDecl]? = names.isEmpty ? [] : nil
        if let content = complex.content { assigned = Self.ends(content, names, from: 0)[names.count] }
        let declared = complex.content.map(Self.declarations) ?? [:]
        if assigned == nil {
            let model = complex.content.map(Self.describe) ?? "empty"
            let unknown = names.filter { declared[$0] == nil }
            for name in unknown { errors.append("\(path): element <\(name)> is not allowed here (content: \(model))") }
            if unknown.isEmpty {
                errors.append("\(path): children (\(names.joined(separator: ", "))) do not match the content \(model)")
            }
        }
        var seen: [String: Int] = [:]
        for (index, child) in node.children.enumerated() {
            seen[child.name, default: 0] += 1
            let matched = assigned.flatMap { index < $0.count ? $0[index] : nil }
            guard let declaration = matched ?? declared[child.name] else { continue }
            validate(child, as: declaration.type, at: "\(path)/\(child.name)[\(seen[child.name] ?? 0)]", into: &errors)
        }
    }

    private func checkAttributes(
        _ node: Node, _ declared: [String: AttributeDecl], at path: String, into errors: inout [String]
    ) {
        for (name, value) in node.attributes.sorted(by: { $0.key < $1.key }) where !Self.isNamespace(name) {
            guard let declaration = declared[name] else {
                errors.append("\(path): undeclared attribute \"\(name)\"")
                continue
            }
            if case .simple(let type) = declaration.type, !matches(value, type) {
                errors.append("\(path): attribute \"\(name)\" value \"\(value)\" does not match the pattern of \(type)")
            }
        }
        for name in declared.keys.sorted() where declared[name]?.required == true && node.attributes[name] == nil {
            errors.append("\(path): missing required attribute \"\(name)\"")
        }
    }

    private func matches(_ value: String, _ simpleType: String) -> Bool {
        let patterns = simpleTypes[simpleType] ?? []
        let whole = NSRange(value.startIndex..., in: value)
        return patterns.isEmpty || patterns.contains { $0.firstMatch(in: value, range: whole) != nil }
    }

    /// Every position at which `particle`, starting at `from`, can end, with the declaration each
    /// child it consumed was matched by (the first way found). Repetitions past `min` must consume.
    private static func ends(_ particle: Particle, _ names: [String], from: Int) -> [Int: [ElementDecl]] {
        var result: [Int: [ElementDecl]] = particle.min == 0 ? [from: []] : [:]
        var frontier: [Int: [ElementDecl]] = [from: []]
        var seen: Set<Int> = particle.min == 0 ? [from] : []
        var count = 0
        while !frontier.isEmpty, particle.max.map({ count < $0 }) ?? true {
            count += 1
            var next: [Int: [ElementDecl]] = [:]
            for (position, done) in frontier.sorted(by: { $0.key < $1.key }) {
                for (end, more) in once(particle.term, names, from: position).sorted(by: { $0.key < $1.key })
                where next[end] == nil && (end > position || count <= particle.min) {
                    next[end] = done + more
                }
            }
            if count >= particle.min {
                if particle.max == nil, count > particle.min { next = next.filter { !seen.contains($0.key) } }
                seen.formUnion(next.keys)
                for (end, done) in next where result[end] == nil { result[end] = done }
            }
            frontier = next
        }
        return result
    }

    private static func once(_ term: Term, _ names: [String], from: Int) -> [Int: [ElementDecl]] {
        switch term {
        case .element(let declaration):
            return from < names.count && names[from] == declaration.name ? [from + 1: [declaration]] : [:]
        case .sequence(let items):
            var states: [Int: [ElementDecl]] = [from: []]
            for item in items {
                var next: [Int: [ElementDecl]] = [:]
                for (position, done) in states.sorted(by: { $0.key < $1.key }) {
                    for (end, more) in ends(item, names, from: position) where next[end] == nil {
                        next[end] = done + more
                    }
                }
                states = next
            }
            return states
        case .choice(let items):
            return items.reduce(into: [:]) { result, item in
                result.merge(ends(item, names, from: from)) { first, _ in first }
            }
        }
    }

    private static func declarations(_ particle: Particle) -> [String: ElementDecl] {
        switch particle.term {
        case .element(let declaration):
            [declaration.name: declaration]
        case .sequence(let items), .choice(let items):
            items.reduce(into: [:]) { $0.merge(declarations($1)) { first, _ in first } }
        }
    }

    private static func describe(_ particle: Particle) -> String {
        let core =
            switch particle.term {
            case .element(let declaration):
                declaration.name
            case .sequence(let items):
                "(" + items.map(describe).joined(separator: ", ") + ")"
            case .choice(let items):
                "(" + items.map(describe).joined(separator: " | ") + ")"
            }
        switch (particle.min, particle.max) {
        case (1, 1): return core
        case (0, 1): return core + "?"
        case (0, nil): return core + "*"
        case (1, nil): return core + "+"
        case (let min, let max): return core + "{\(min),\(max.map(String.init) ?? "")}"
        }
    }
}
