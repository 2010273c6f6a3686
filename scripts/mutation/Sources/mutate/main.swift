#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// mutate ROOT MANIFEST EXCLUDED FILE...
//
// Rewrites each FILE (a path under ROOT, which must be a copy: the files are changed in place)
// into its mutant schema, adds the run-time switch to every module touched, and writes the list
// of mutants to MANIFEST as JSON. EXCLUDED is a file of mutant ids to leave out, one per line
// (ids stay stable when some are left out), or "-" for none.

/// Writes `text` to standard error (file descriptor 2).
func complain(_ text: String) {
    var bytes = Array(text.utf8)
    bytes.withUnsafeMutableBytes { _ = write(2, $0.baseAddress, $0.count) }
}

func read(_ path: String) -> String? {
    guard let file = fopen(path, "r") else { return nil }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = fread(&buffer, 1, buffer.count, file)
        if count <= 0 { break }
        bytes += buffer[0..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
}

func save(_ text: String, to path: String) {
    guard let file = fopen(path, "w") else {
        complain("mutate: cannot write \(path)\n")
        exit(2)
    }
    _ = text.utf8CString.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count - 1, file) }
    fclose(file)
}

func json(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\t": out += "\\t"
        default:
            if scalar.value < 0x20 { out += "\\u" + String(scalar.value, radix: 16).leftPadded(to: 4) } else { out.unicodeScalars.append(scalar) }
        }
    }
    return out + "\""
}

extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}

let switchSource = """
    // The mutation runner's switch: which mutant this process runs (SESSION_BENCH_MUTANT), 0 for none.
    #if canImport(Glibc)
    import Glibc
    #elseif canImport(Darwin)
    import Darwin
    #endif

    let __activeMutant: Int = getenv("SESSION_BENCH_MUTANT").flatMap { Int(String(cString: $0)) } ?? 0

    @inline(__always) func __mutant(_ id: Int) -> Bool { __activeMutant == id }
    @inline(__always) func __mutated(_ ids: Int...) -> Bool { ids.contains(__activeMutant) }
    @inline(__always) func __compare<T: Comparable>(_ id: Int, _ l: T, _ r: T, _ o: (T, T) -> Bool, _ m: (T, T) -> Bool) -> Bool {
        __mutant(id) ? m(l, r) : o(l, r)
    }
    @inline(__always) func __equate<T: Equatable>(_ id: Int, _ l: T, _ r: T, _ o: (T, T) -> Bool, _ m: (T, T) -> Bool) -> Bool {
        __mutant(id) ? m(l, r) : o(l, r)
    }
    @inline(__always) func __logical(_ id: Int, _ l: Bool, _ r: @autoclosure () -> Bool, _ and: Bool) -> Bool {
        (and != __mutant(id)) ? (l && r()) : (l || r())
    }

    """

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 4 else {
    complain("usage: mutate ROOT MANIFEST EXCLUDED FILE...\n")
    exit(2)
}
let root = arguments[0]
let manifestPath = arguments[1]
let excluded: Set<Int> =
    arguments[2] == "-" ? [] : Set((read(arguments[2]) ?? "").split(separator: "\n").compactMap { Int($0) })
var nextID = 1
var all: [Mutant] = []
var modules = Set<String>()
for file in arguments[3...] {
    guard let source = read(root + "/" + file) else {
        complain("mutate: cannot read \(file)\n")
        exit(2)
    }
    var mutator = Mutator(path: file, source: source, firstID: nextID, excluded: excluded)
    let mutated = mutator.run()
    save(mutated, to: root + "/" + file)
    nextID = mutator.nextID
    all += mutator.mutants
    modules.insert(String(file[..<file.lastIndex(of: "/")!]))
}
for module in modules { save(switchSource, to: root + "/" + module + "/MutantSwitch.swift") }
var lines: [String] = []
for mutant in all {
    lines.append(
        "{\"id\": \(mutant.id), \"file\": \(json(mutant.file)), \"line\": \(mutant.line), \"operation\": \(json(mutant.operation)), "
            + "\"original\": \(json(mutant.original)), \"change\": \(json(mutant.change)), \"function\": \(json(mutant.function)), "
            + "\"functionLines\": [\(mutant.functionLines.map(String.init).joined(separator: ", "))]}")
}
save("[\n" + lines.joined(separator: ",\n") + "\n]\n", to: manifestPath)
print("\(all.count) mutants in \(arguments.count - 3) files")
