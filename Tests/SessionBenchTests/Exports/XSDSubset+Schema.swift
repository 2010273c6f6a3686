import Foundation
#if canImport(FoundationXML)
    import FoundationXML
#endif

extension XSDSubset {
    /// An element of a parsed XML file: its name as written (prefix included), its attributes, its
    /// child elements, the text directly inside it (CDATA included) and the line it starts on.
    final class Node {
        let name: String
        let attributes: [String: String]
        let line: Int
        var children: [Node] = []
        var text = ""

        init(name: String, attributes: [String: String], line: Int) {
            (self.name, self.attributes, self.line) = (name, attributes, line)
        }
    }

    /// Parses `data` with XMLParser (no namespace processing, no external entities).
    static func parse(_ data: Data, what: String) throws -> Node {
        let parser = XMLParser(data: data)
        let builder = TreeBuilder()
        parser.delegate = builder
        parser.shouldProcessNamespaces = false
        parser.shouldResolveExternalEntities = false
        // Linux's XMLParser can return true after a fatal error, so every reported error counts
        // (libxml2's warnings aside), and so does an element left open.
        let parsed = parser.parse()
        guard parsed, builder.errors.isEmpty, builder.isComplete, let root = builder.root else {
            let error = builder.errors.first ?? parser.parserError
            let reason = error.map { "\($0)" } ?? "no root element, or an element left open"
            throw Failure(description: "\(what) is not well-formed XML (line \(parser.lineNumber)): \(reason)")
        }
        return root
    }

    /// Namespace declarations and `xsi:` attributes, which no schema here declares.
    static func isNamespace(_ attribute: String) -> Bool {
        attribute == "xmlns" || attribute.hasPrefix("xmlns:") || attribute.hasPrefix("xsi:")
    }

    /// Turns a parsed XSD into declarations, refusing every construct outside the supported subset.
    struct Compiler {
        private static let namespace = "http://www.w3.org/2001/XMLSchema"
        private(set) var elements: [String: ElementDecl] = [:]
        private(set) var complexTypes: [String: ComplexType] = [:]
        private(set) var simpleTypes: [String: [NSRegularExpression]] = [:]
        private var complexNames: Set<String> = []
        private var inlineCount = 0
        private let root: Node
        private let xs: String

        init(_ root: Node) throws {
            self.root = root
            xs = String(root.name.dropLast("schema".count))
            let declaration = xs.isEmpty ? "xmlns" : "xmlns:" + xs.dropLast()
            guard root.name.hasSuffix("schema"), xs.isEmpty || xs.hasSuffix(":"),
                (root.attributes[declaration] ?? Self.namespace) == Self.namespace
            else { throw Self.failure("the root is not an XML Schema <schema>", root) }
            try allow(root, [])
        }

        mutating func compile() throws {
            let top = try content(of: root)
            var declared: Set<String> = []
            for node in top {
                let kind = try local(node)
                guard ["simpleType", "complexType", "element"].contains(kind) else {
                    throw Self.failure("an unsupported top-level declaration", node)
                }
                // Elements and types are separate symbol spaces; simple and complex types share one.
                let name = try required("name", node)
                guard declared.insert("\(kind == "element" ? "element" : "type") \(name)").inserted else {
                    throw Self.failure("a second declaration of \"\(name)\"", node)
                }
                if kind == "simpleType" { simpleTypes[name] = try patterns(node) }
                if kind == "complexType" { complexNames.insert(name) }
            }
            // Every top-level element's type is known before any content model refers to it.
            var inline: [(key: String, node: Node)] = []
            for node in top where try local(node) == "element" {
                try allow(node, ["name", "type"])
                let name = try required("name", node)
                if let type = node.attributes["type"], try content(of: node).isEmpty {
                    elements[name] = ElementDecl(name: name, type: try typeRef(type, node))
                } else {
                    inline.append((key: "element \(name)", node: try inlineComplexType(node)))
                    elements[name] = ElementDecl(name: name, type: .complex("element \(name)"))
                }
            }
            for (key, node) in inline { complexTypes[key] = try complexType(node) }
            for node in top where try local(node) == "complexType" {
                complexTypes[try required("name", node)] = try complexType(node)
            }
        }

        /// The one inline complexType of an element that has no type=.
        private func inlineComplexType(_ node: Node) throws -> Node {
            let inner = try content(of: node)
            guard node.attributes["type"] == nil, inner.count == 1, try local(inner[0]) == "complexType" else {
                throw Self.failure("an element needs a type= or one inline complexType", node)
            }
            try allow(inner[0], ["mixed"])
            return inner[0]
        }

        private func typeRef(_ name: String, _ node: Node, simpleOnly: Bool = false) throws -> TypeRef {
            if name == xs + "string" { return .string }
            if simpleTypes[name] != nil { return .simple(name) }
            if complexNames.contains(name), !simpleOnly { return .complex(name) }
            throw Self.failure("an unsupported or undeclared type \"\(name)\"", node)
        }

        private mutating func complexType(_ node: Node) throws -> ComplexType {
            try allow(node, ["name", "mixed"])
            let mixed = node.attributes["mixed"] ?? "false"
            guard ["true", "1", "false", "0"].contains(mixed) else { throw Self.failure("a bad mixed=", node) }
            var particle: Particle?
            var attributes: [String: AttributeDecl] = [:]
            for child in try content(of: node) {
                switch try local(child) {
                case "sequence", "choice":
                    guard particle == nil, attributes.isEmpty else {
                        throw Self.failure("a content model after another or after attributes", child)
                    }
                    particle = try self.particle(child)
                case "attribute":
                    try allow(child, ["name", "type", "use"])
                    let name = try required("name", child)
                    let use = child.attributes["use"] ?? "optional"
                    guard attributes[name] == nil, try content(of: child).isEmpty,
                        ["optional", "required"].contains(use)
                    else { throw Self.failure("an unsupported attribute declaration", child) }
                    let type = try typeRef(try required("type", child), child, simpleOnly: true)
                    attributes[name] = AttributeDecl(name: name, type: type, required: use == "required")
                default:
                    throw Self.failure("an unsupported construct in a complexType", child)
                }
            }
            return ComplexType(mixed: mixed == "true" || mixed == "1", content: particle, attributes: attributes)
        }

        private mutating func particle(_ node: Node) throws -> Particle {
            let min = try node.attributes["minOccurs"].map { try count($0, node) } ?? 1
            let max: Int?
            switch node.attributes["maxOccurs"] {
            case nil: max = 1
            case "unbounded": max = nil
            case let text?: max = try count(text, node)
            }
            guard max.map({ $0 >= min }) ?? true else { throw Self.failure("maxOccurs is below minOccurs", node) }
            switch try local(node) {
            case "sequence", "choice":
                try allow(node, ["minOccurs", "maxOccurs"])
                let items = try content(of: node).map { try particle($0) }
                let term: Term = try local(node) == "sequence" ? .sequence(items) : .choice(items)
                return Particle(term: term, min: min, max: max)
            case "element" where node.attributes["ref"] != nil:
                try allow(node, ["ref", "minOccurs", "maxOccurs"])
                guard let declaration = elements[try required("ref", node)], try content(of: node).isEmpty else {
                    throw Self.failure("a ref to an undeclared element", node)
                }
                return Particle(term: .element(declaration), min: min, max: max)
            case "element":
                try allow(node, ["name", "type", "minOccurs", "maxOccurs"])
                let name = try required("name", node)
                let type: TypeRef
                if let typeName = node.attributes["type"], try content(of: node).isEmpty {
                    type = try typeRef(typeName, node)
                } else {
                    inlineCount += 1
                    complexTypes["inline \(inlineCount)"] = try complexType(try inlineComplexType(node))
                    type = .complex("inline \(inlineCount)")
                }
                return Particle(term: .element(ElementDecl(name: name, type: type)), min: min, max: max)
            default:
                throw Self.failure("an unsupported particle", node)
            }
        }

        /// The anchored patterns of `<simpleType><restriction base="xs:string"><pattern …/>…`.
        private func patterns(_ node: Node) throws -> [NSRegularExpression] {
            try allow(node, ["name"])
            let inner = try content(of: node)
            guard inner.count == 1, try local(inner[0]) == "restriction", inner[0].attributes["base"] == xs + "string"
            else { throw Self.failure("a simpleType other than a restriction of string", node) }
            try allow(inner[0], ["base"])
            return try content(of: inner[0]).map { facet in
                try allow(facet, ["value"])
                guard try local(facet) == "pattern", try content(of: facet).isEmpty else {
                    throw Self.failure("a facet other than pattern", facet)
                }
                do { return try NSRegularExpression(pattern: "\\A(?:\(try required("value", facet)))\\z") } catch {
                    throw Self.failure("a pattern NSRegularExpression cannot read", facet)
                }
            }
        }

        /// The children of `node` other than annotations; throws on text outside annotations.
        private func content(of node: Node) throws -> [Node] {
            guard node.text.allSatisfy(\.isWhitespace) else { throw Self.failure("text in the schema", node) }
            return try node.children.filter { try local($0) != "annotation" }
        }

        private func local(_ node: Node) throws -> String {
            guard node.name.hasPrefix(xs) else { throw Self.failure("an element outside the XSD namespace", node) }
            return String(node.name.dropFirst(xs.count))
        }

        private func allow(_ node: Node, _ attributes: Set<String>) throws {
            for name in node.attributes.keys.sorted() where !attributes.contains(name) && !isNamespace(name) {
                throw Self.failure("an unsupported attribute \"\(name)\"", node)
            }
        }

        private func required(_ attribute: String, _ node: Node) throws -> String {
            guard let value = node.attributes[attribute] else { throw Self.failure("no \(attribute)=", node) }
            return value
        }

        private func count(_ text: String, _ node: Node) throws -> Int {
            guard let value = Int(text), value >= 0 else { throw Self.failure("a bad occurrence \"\(text)\"", node) }
            return value
        }

        private static func failure(_ what: String, _ node: Node) -> Failure {
            Failure(description: "XSD: \(what) at <\(node.name)> (line \(node.line)), outside the supported subset")
        }
    }
}

/// Builds `XSDSubset.Node`s from XMLParser's callbacks.
private final class TreeBuilder: NSObject, XMLParserDelegate {
    private(set) var root: XSDSubset.Node?
    private(set) var errors: [any Error] = []
    private var stack: [XSDSubset.Node] = []

    /// Whether every element that started also ended.
    var isComplete: Bool { stack.isEmpty }

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
        qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]
    ) {
        let node = XSDSubset.Node(name: elementName, attributes: attributeDict, line: parser.lineNumber)
        stack.last?.children.append(node)
        if root == nil { root = node }
        stack.append(node)
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        _ = stack.popLast()
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        stack.last?.text += string
    }

    func parser(_ parser: XMLParser, foundCDATA block: Data) {
        stack.last?.text += String(decoding: block, as: UTF8.self)
    }

    /// libxml2's XML_WAR_* codes (an unknown XML version, a relative namespace URI, …): not errors.
    private static let warnings: Set<Int> = [97, 98, 99, 100, 102, 106, 107]

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
        if !Self.warnings.contains((parseError as NSError).code) { errors.append(parseError) }
    }
}
