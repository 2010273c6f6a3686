import Foundation
import SessionContract

/// JSON encoding and decoding for the backends' records, with errors that name the file and the
/// kind of damage but never the contents.
enum JSONRecord {
    static func encode<Record: Encodable>(_ record: Record, for fileName: String) throws(StorageError) -> Data {
        let encoder = JSONEncoder()
        // Slashes stay unescaped so a plaintext file holds each value byte for byte, as a reader
        // (or an at-rest scan) would expect.
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return try encoder.encode(record)
        } catch {
            throw .writeFailed("\(fileName): the session could not be encoded")
        }
    }

    static func decode<Record: Decodable>(_ type: Record.Type, from data: Data, fileName: String)
        throws(StorageError) -> Record
    {
        guard !data.isEmpty else { throw .unreadable("\(fileName): not a stored session (empty file)") }
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch let error as DecodingError {
            throw .unreadable("\(fileName): not a stored session (\(reason(error)))")
        } catch {
            throw .unreadable("\(fileName): not a stored session (undecodable)")
        }
    }

    /// What is wrong, in terms of the record's own field names only. The decoder's own text is
    /// not used: it can quote the characters it choked on.
    private static func reason(_ error: DecodingError) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            keys.isEmpty
                ? "the record"
                : keys.map { $0.intValue.map(String.init) ?? $0.stringValue }
                    .joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context): return "missing field \(path(context.codingPath + [key]))"
        case .typeMismatch(_, let context): return "wrong type for \(path(context.codingPath))"
        case .valueNotFound(_, let context): return "null for \(path(context.codingPath))"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "not valid JSON" : "malformed \(path(context.codingPath))"
        @unknown default: return "undecodable"
        }
    }
}
