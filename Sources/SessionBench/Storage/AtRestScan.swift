import Foundation

/// What a storage folder shows to anyone who can read the disk: whether any file holds a
/// secret's bytes in clear, and how widely its files can be read. Names files, never secrets.
struct AtRestScan: Sendable, Hashable {
    /// Files holding a secret in clear, each with what kind of secret (`refresh token`).
    var exposures: [String] = []
    /// Files readable or writable by the group or others, with their mode (`data/x 0644`).
    var looseFiles: [String] = []
    /// The widest permission bits seen on any file (`0600`).
    var widestMode: UInt16 = 0

    var holdsPlaintext: Bool { !exposures.isEmpty }

    /// Scans every regular file under `directory` for `secrets` (kind → byte strings), in clear
    /// or base64-encoded (standard or URL alphabet: encoding is not encryption), and every file
    /// name for them. A name that holds a secret is not printed.
    static func scan(_ directory: String, secrets: [String: [[UInt8]]]) -> AtRestScan {
        var scan = AtRestScan()
        let manager = FileManager.default
        guard let walker = manager.enumerator(atPath: directory) else { return scan }
        let needles = secrets.mapValues { $0.flatMap(Self.forms) }
        while let relative = walker.nextObject() as? String {
            let path = directory + "/" + relative
            let nameBytes = Array(relative.utf8)
            let namedKinds = needles.keys.sorted().filter { kind in secrets[kind]!.contains { nameBytes.contains($0) } }
            let shown = namedKinds.isEmpty ? relative : "a file whose name holds \(namedKinds.joined(separator: ", "))"
            for kind in namedKinds { scan.exposures.append("\(shown): its name holds \(kind) bytes") }
            var info = stat()
            guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            let mode = UInt16(info.st_mode & 0o777)
            scan.widestMode |= mode
            if mode & 0o077 != 0 { scan.looseFiles.append("\(shown) \(String(mode, radix: 8).leftPadded(4))") }
            guard let contents = manager.contents(atPath: path) else { continue }
            let bytes = [UInt8](contents)
            for kind in needles.keys.sorted() where needles[kind]!.contains(where: { bytes.contains($0) }) {
                scan.exposures.append("\(shown) holds \(kind) bytes in clear or merely encoded")
            }
        }
        return scan
    }

    /// The byte strings that give `secret` away: itself, and its base64 in each of the three
    /// alignments it can have inside a longer encoded text (the last, partial group left out).
    static func forms(of secret: [UInt8]) -> [[UInt8]] {
        var forms = [secret]
        for offset in 0..<3 where secret.count - offset >= 12 {
            let tail = Array(secret[offset...])
            let whole = Array(tail.prefix(tail.count / 3 * 3))
            let standard = Array(Data(whole).base64EncodedString().utf8)
            let url = standard.map { byte in
                byte == UInt8(ascii: "+") ? UInt8(ascii: "-") : byte == UInt8(ascii: "/") ? UInt8(ascii: "_") : byte
            }
            forms.append(standard)
            if url != standard { forms.append(url) }
        }
        return forms
    }

    /// Adds what another scan of the same storage saw.
    mutating func merge(_ other: AtRestScan) {
        for exposure in other.exposures where !exposures.contains(exposure) { exposures.append(exposure) }
        for file in other.looseFiles where !looseFiles.contains(file) { looseFiles.append(file) }
        widestMode |= other.widestMode
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

extension Array where Element == UInt8 {
    /// Whether `needle` occurs in these bytes.
    fileprivate func contains(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return false }
        let first = needle[0]
        var index = 0
        let last = count - needle.count
        while index <= last {
            if self[index] == first, self[index..<(index + needle.count)].elementsEqual(needle) { return true }
            index += 1
        }
        return false
    }
}
