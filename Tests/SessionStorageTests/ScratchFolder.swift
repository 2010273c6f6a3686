#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A fresh, empty folder under the system's temporary folder, removed with everything in it when
/// the value goes away, so tests never see each other's files.
final class ScratchFolder {
    let path: String

    init() throws {
        path =
            FileManager.default.temporaryDirectory
                .appendingPathComponent("session-storage-tests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// `name` inside the folder.
    func path(_ name: String) -> String { path + "/" + name }

    /// The paths, relative to the folder, of every regular file under it, sorted.
    func files() -> [String] {
        let all = FileManager.default.subpaths(atPath: path) ?? []
        return all.filter { Self.mode(of: self.path($0)).map { $0 & S_IFMT == S_IFREG } ?? false }.sorted()
    }

    /// Every entry directly in the folder, hidden ones included, sorted.
    func entries() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path).sorted()
    }

    /// The full `st_mode` of `path` (type and permission bits), or `nil` when it does not exist.
    static func mode(of path: String) -> mode_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode : nil
    }
}
