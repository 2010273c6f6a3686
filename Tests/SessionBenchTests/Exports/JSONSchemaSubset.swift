import Foundation

/// A JSON Schema (draft-07) validator for the few keywords our export formats' schemas use.
///
/// It checks `type` (a name or a list of names: object, array, string, number, integer, boolean,
/// null), `properties`, `patternProperties` (an unanchored regular-expression search, as JSON
/// Schema specifies), `additionalProperties` (a boolean or a schema, applied to names matched by
/// neither of the two), `required`, `items` (one schema for every element), `minItems` and
/// `minimum`. `$schema`, `$id`, `title` and `description` are read and ignored. Any other keyword,
/// anywhere in the schema, makes `init` throw, so a schema is never checked only in part.
struct JSONSchemaSubset {
    /// Why a schema could not be loaded or a document could not be read.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private let root: SchemaNode

    /// Loads a schema; throws for malformed JSON and for any keyword outside the supported set.
    init(schema: Data) throws {
        root = try SchemaNode(Value(parsing: schema), at: "#")
    }

    /// The ways `document` breaks the schema, each led by a JSON pointer (`/` is the document
    /// itself); empty when it conforms. Throws when `document` is not JSON at all.
    func errors(in document: Data) throws -> [String] {
        var errors: [String] = []
        root.check(try Value(parsing: document), at: "", into: &errors)
        return errors
    }
}

extension JSONSchemaSubset {
    /// A parsed JSON value, with booleans told apart from numbers.
    enum Value {
        case object([String: Value])
        case array([Value])
        case string(String)
        case number(Double)
        case bool(Bool)
        case null

        init(parsing data: Data) throws {
            let parsed: Any
            do {
                parsed = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
            } catch {
                throw JSONSchemaSubset.Failure(description: "not JSON: \(error)")
            }
            if let offset = Self.trailingComma(in: data) {
                throw JSONSchemaSubset.Failure(description: "not JSON: a trailing comma at byte \(offset)")
            }
            self = try Value(foundation: parsed)
        }

        /// JSONSerialization (on Linux) accepts a comma before `]` or `}`, which RFC 8259 and the
        /// formats' consumers do not. It keeps the last of repeated keys, which this does not catch.
        private static func trailingComma(in data: Data) -> Int? {
            let (quote, backslash) = (UInt8(ascii: "\""), UInt8(ascii: "\\"))
            var inString = false
            var escaped = false
            var comma: Int?
            for (offset, byte) in data.enumerated() {
                if inString {
                    if escaped {
                        escaped = false
                    } else {
                        escaped = byte == backslash
                        inString = byte != quote
                    }
                    continue
                }
                switch byte {
                case UInt8(ascii: "]"), UInt8(ascii: "}"):
                    if let comma { return comma }
                case UInt8(ascii: ","):
                    comma = offset
                case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                    break
                default:
                    inString = byte == quote
                    comma = nil
                }
            }
            return nil
        }

        /// Converts what JSONSerialization returns. A boolean arrives as an NSNumber (a CFBoolean) on
        /// Linux as on Darwin, whose `objCType` is `c` (char), an encoding no JSON number gets.
        init(foundation value: Any) throws {
            switch value {
            case let dictionary as [String: Any]:
                self = .object(try dictionary.mapValues { try Value(foundation: $0) })
            case let array as [Any]:
                self = .array(try array.map { try Value(foundation: $0) })
            case let string as String:
                self = .string(string)
            case is NSNull:
                self = .null
            case let bool as Bool where type(of: value) == Bool.self:
                self = .bool(bool)
            case let number as NSNumber:
                if String(cString: number.objCType) == "c" {
                    self = .bool(number.boolValue)
                } else if number.doubleValue.isFinite {
                    self = .number(number.doubleValue)
                } else {
                    throw JSONSchemaSubset.Failure(description: "a number that is not finite: \(number)")
                }
            default:
                throw JSONSchemaSubset.Failure(description: "an unexpected JSON value of type \(type(of: value))")
            }
        }

        var typeName: String {
            switch self {
            case .object: "object"
            case .array: "array"
            case .string: "string"
            case .number: "number"
            case .bool: "boolean"
            case .null: "null"
            }
        }
    }
}

/// One schema (or subschema), compiled.
private final class SchemaNode {
    private static let ignored: Set<String> = ["$schema", "$id", "title", "description"]
    private static let typeNames: Set<String> = ["object", "array", "string", "number", "integer", "boolean", "null"]

    private var types: [String]?
    private var properties: [String: SchemaNode] = [:]
    private var patternProperties: [(regex: NSRegularExpression, node: SchemaNode)] = []
    private var additionalAllowed = true
    private var additionalSchema: SchemaNode?
    private var required: [String] = []
    private var items: SchemaNode?
    private var minItems: Int?
    private var minimum: Double?

    init(_ value: JSONSchemaSubset.Value, at path: String) throws {
        guard case .object(let keywords) = value else { throw Self.failure("a schema must be an object", path) }
        for (keyword, value) in keywords.sorted(by: { $0.key < $1.key }) {
            let here = "\(path)/\(keyword)"
            switch (keyword, value) {
            case (let name, _) where Self.ignored.contains(name):
                continue
            case ("type", .string(let name)):
                types = [try Self.typeName(name, here)]
            case ("type", .array(let names)) where !names.isEmpty:
                types = try Self.strings(names, here).map { try Self.typeName($0, here) }
            case ("properties", .object(let schemas)):
                properties = try schemas.reduce(into: [:]) { nodes, member in
                    nodes[member.key] = try SchemaNode(member.value, at: "\(here)/\(member.key)")
                }
            case ("patternProperties", .object(let schemas)):
                patternProperties = try schemas.sorted { $0.key < $1.key }.map { pattern, schema in
                    let regex: NSRegularExpression
                    do { regex = try NSRegularExpression(pattern: pattern) } catch {
                        throw Self.failure("invalid pattern \"\(pattern)\"", here)
                    }
                    return (regex, try SchemaNode(schema, at: "\(here)/\(pattern)"))
                }
            case ("additionalProperties", .bool(let allowed)):
                additionalAllowed = allowed
            case ("additionalProperties", .object):
                additionalSchema = try SchemaNode(value, at: here)
            case ("required", .array(let names)):
                required = try Self.strings(names, here)
            case ("items", .object):
                items = try SchemaNode(value, at: here)
            case ("minItems", .number(let count)) where count >= 0 && count.rounded() == count && count < 1e15:
                minItems = Int(count)
            case ("minimum", .number(let bound)):
                minimum = bound
            case ("type", _), ("properties", _), ("patternProperties", _), ("additionalProperties", _),
                ("required", _), ("items", _), ("minItems", _), ("minimum", _):
                throw Self.failure("unsupported value for \"\(keyword)\"", here)
            default:
                throw Self.failure("unsupported keyword \"\(keyword)\"", path)
            }
        }
    }

    private static func strings(_ values: [JSONSchemaSubset.Value], _ path: String) throws -> [String] {
        try values.map { value in
            guard case .string(let string) = value else { throw failure("expected strings", path) }
            return string
        }
    }

    private static func typeName(_ name: String, _ path: String) throws -> String {
        guard typeNames.contains(name) else { throw failure("unknown type \"\(name)\"", path) }
        return name
    }

    private static func failure(_ message: String, _ path: String) -> JSONSchemaSubset.Failure {
        JSONSchemaSubset.Failure(description: "\(message) at \(path)")
    }

    func check(_ value: JSONSchemaSubset.Value, at path: String, into errors: inout [String]) {
        let here = path.isEmpty ? "/" : path
        if let types, !types.contains(where: { Self.value(value, is: $0) }) {
            errors.append("\(here): expected \(types.joined(separator: " or ")), found \(value.typeName)")
            return
        }
        switch value {
        case .object(let members):
            for name in required where members[name] == nil {
                errors.append("\(here): missing required \"\(name)\"")
            }
            for (name, member) in members.sorted(by: { $0.key < $1.key }) {
                checkMember(name, member, at: "\(path)/\(Self.escape(name))", into: &errors)
            }
        case .array(let elements):
            if let minItems, elements.count < minItems {
                errors.append("\(here): expected at least \(minItems) items, found \(elements.count)")
            }
            for (index, element) in elements.enumerated() {
                items?.check(element, at: "\(path)/\(index)", into: &errors)
            }
        case .number(let number):
            if let minimum, number < minimum {
                errors.append("\(here): \(Self.format(number)) is less than the minimum \(Self.format(minimum))")
            }
        case .string, .bool, .null:
            break
        }
    }

    private func checkMember(
        _ name: String, _ member: JSONSchemaSubset.Value, at path: String, into errors: inout [String]
    ) {
        var matched = false
        if let node = properties[name] {
            matched = true
            node.check(member, at: path, into: &errors)
        }
        let whole = NSRange(name.startIndex..., in: name)
        for (regex, node) in patternProperties where regex.firstMatch(in: name, range: whole) != nil {
            matched = true
            node.check(member, at: path, into: &errors)
        }
        guard !matched else { return }
        if let additionalSchema {
            additionalSchema.check(member, at: path, into: &errors)
        } else if !additionalAllowed {
            errors.append("\(path): property not allowed (additionalProperties is false)")
        }
    }

    private static func value(_ value: JSONSchemaSubset.Value, is type: String) -> Bool {
        switch (type, value) {
        case ("object", .object), ("array", .array), ("string", .string), ("number", .number),
            ("boolean", .bool), ("null", .null):
            true
        case ("integer", .number(let number)):
            number.rounded(.towardZero) == number
        default:
            false
        }
    }

    private static func format(_ number: Double) -> String {
        number.rounded() == number && abs(number) < 1e15 ? String(Int(number)) : String(number)
    }

    /// A JSON pointer reference token (RFC 6901): `~` is written `~0` and `/` is written `~1`.
    private static func escape(_ name: String) -> String {
        name.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }
}
