import Foundation

public enum StrictJSON {
    /// Parses a whole document; nesting deeper than `maxDepth` is an error, not a stack overflow.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = 64) throws(JSONSyntaxError) -> JSONValue {
        var parser = Parser(bytes: bytes, maxDepth: maxDepth)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { parser.index = 3 }
        parser.skipSpace()
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.index == bytes.count else {
            throw parser.fail("unexpected \(parser.describeHere()) after the end of the document")
        }
        return value
    }

    private struct Parser {
        let bytes: [UInt8]
        let maxDepth: Int
        var index = 0

        func fail(_ problem: String) -> JSONSyntaxError {
            var line = 1
            var column = 1
            for byte in bytes[..<min(index, bytes.count)] {
                if byte == UInt8(ascii: "\n") {
                    line += 1
                    column = 1
                } else if byte & 0xC0 != 0x80 {
                    column += 1
                }
            }
            return JSONSyntaxError(line: line, column: column, problem: problem)
        }

        func describeHere() -> String {
            guard index < bytes.count else { return "end of file" }
            let byte = bytes[index]
            if (0x21...0x7E).contains(byte) { return "'\(Character(UnicodeScalar(byte)))'" }
            return String(format: "byte 0x%02X", byte)
        }

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func value(depth: Int) throws(JSONSyntaxError) -> JSONValue {
            guard index < bytes.count else { throw fail("unexpected end of file; a value was expected") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object(depth: depth + 1)
            case UInt8(ascii: "["): return try array(depth: depth + 1)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"):
                try literal("true")
                return .bool(true)
            case UInt8(ascii: "f"):
                try literal("false")
                return .bool(false)
            case UInt8(ascii: "n"):
                try literal("null")
                return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
            default: throw fail("unexpected \(describeHere()); a value was expected")
            }
        }

        mutating func literal(_ word: String) throws(JSONSyntaxError) {
            let utf8 = Array(word.utf8)
            guard bytes.count - index >= utf8.count, Array(bytes[index..<index + utf8.count]) == utf8 else {
                throw fail("unexpected \(describeHere()); a value was expected")
            }
            index += utf8.count
        }

        mutating func object(depth: Int) throws(JSONSyntaxError) -> JSONValue {
            guard depth <= maxDepth else { throw fail("nested deeper than \(maxDepth) levels") }
            index += 1
            var members: [(key: String, value: JSONValue)] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                    throw fail(
                        members.isEmpty
                            ? "unexpected \(describeHere()); a key in double quotes was expected"
                            : "unexpected \(describeHere()) after a comma; a key was expected (no trailing commas)")
                }
                let keyStart = index
                let key = try string()
                if members.contains(where: { $0.key == key }) {
                    index = keyStart
                    throw fail("key \"\(key)\" appears twice in one object")
                }
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                    throw fail("unexpected \(describeHere()); ':' was expected")
                }
                index += 1
                skipSpace()
                members.append((key, try value(depth: depth)))
                skipSpace()
                guard index < bytes.count else { throw fail("unexpected end of file; ',' or '}' was expected") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "}") else {
                    throw fail("unexpected \(describeHere()); ',' or '}' was expected")
                }
                index += 1
                return .object(members)
            }
        }

        mutating func array(depth: Int) throws(JSONSyntaxError) -> JSONValue {
            guard depth <= maxDepth else { throw fail("nested deeper than \(maxDepth) levels") }
            index += 1
            var elements: [JSONValue] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            while true {
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                    throw fail("unexpected ']' after a comma; a value was expected (no trailing commas)")
                }
                elements.append(try value(depth: depth))
                skipSpace()
                guard index < bytes.count else { throw fail("unexpected end of file; ',' or ']' was expected") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "]") else {
                    throw fail("unexpected \(describeHere()); ',' or ']' was expected")
                }
                index += 1
                return .array(elements)
            }
        }

        mutating func number() throws(JSONSyntaxError) -> String {
            let start = index
            func digits(_ index: inout Int, _ bytes: [UInt8]) -> Int {
                let begin = index
                while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
                return index - begin
            }
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            let integerStart = index
            let integerDigits = digits(&index, bytes)
            guard integerDigits > 0 else { throw fail("a number needs digits") }
            if integerDigits > 1, bytes[integerStart] == UInt8(ascii: "0") {
                index = integerStart
                throw fail("a number may not start with 0")
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard digits(&index, bytes) > 0 else { throw fail("a digit must follow the decimal point") }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                    index += 1
                }
                guard digits(&index, bytes) > 0 else { throw fail("a digit must follow the exponent") }
            }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        mutating func string() throws(JSONSyntaxError) -> String {
            index += 1  // the opening quote
            var scalars = String.UnicodeScalarView()
            var raw: [UInt8] = []
            func flush(_ raw: inout [UInt8], _ scalars: inout String.UnicodeScalarView) throws(JSONSyntaxError) {
                guard !raw.isEmpty else { return }
                guard let text = String(validating: raw, as: UTF8.self) else {
                    throw fail("a string holds bytes that are not UTF-8")
                }
                scalars.append(contentsOf: text.unicodeScalars)
                raw.removeAll()
            }
            while true {
                guard index < bytes.count else { throw fail("unexpected end of file inside a string") }
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    try flush(&raw, &scalars)
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    try flush(&raw, &scalars)
                    index += 1
                    guard index < bytes.count else { throw fail("unexpected end of file inside a string") }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""): scalars.append("\"")
                    case UInt8(ascii: "\\"): scalars.append("\\")
                    case UInt8(ascii: "/"): scalars.append("/")
                    case UInt8(ascii: "b"): scalars.append("\u{08}")
                    case UInt8(ascii: "f"): scalars.append("\u{0C}")
                    case UInt8(ascii: "n"): scalars.append("\n")
                    case UInt8(ascii: "r"): scalars.append("\r")
                    case UInt8(ascii: "t"): scalars.append("\t")
                    case UInt8(ascii: "u"):
                        var code = try hex4()
                        if (0xD800...0xDBFF).contains(code) {
                            guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"),
                                bytes[index + 1] == UInt8(ascii: "u")
                            else {
                                throw fail("a lone surrogate in a \\u escape")
                            }
                            index += 2
                            let low = try hex4()
                            guard (0xDC00...0xDFFF).contains(low) else {
                                throw fail("a lone surrogate in a \\u escape")
                            }
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let scalar = Unicode.Scalar(code) else { throw fail("a lone surrogate in a \\u escape") }
                        scalars.append(scalar)
                    default:
                        index -= 1
                        throw fail("unknown escape \\\(describeHere()) in a string")
                    }
                case 0x00..<0x20:
                    throw fail("a control character inside a string; write it as an escape")
                default:
                    raw.append(byte)
                    index += 1
                }
            }
        }

        mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
            guard bytes.count - index >= 4 else { throw fail("\\u needs four hex digits") }
            var code: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt32
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
                default: throw fail("\\u needs four hex digits")
                }
                code = code * 16 + digit
                index += 1
            }
            return code
        }
    }
}
