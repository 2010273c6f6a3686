import Foundation
import SessionBench
import SessionContract
import Synchronization

/// Where a result goes, decided before anything runs.
///
/// - `-` is standard output.
/// - A regular file (new or existing) is replaced whole: the text goes to a temporary file
///   beside it, which is renamed over it only when every output has been written. An
///   existing file keeps its mode (and, where the user may, its owner).
/// - A symbolic link is followed: the file it points to is replaced, and the link stays.
/// - A character device or a FIFO (`/dev/null`, `/dev/stdout`, a named pipe) is written
///   directly: nothing is renamed over it.
/// - A directory, a file with several hard links (replacing it would split them) and
///   anything else are refused.
struct OutputTarget: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        case standardOutput
        /// Replaced by renaming a temporary file over `file` (the link's target, for a link).
        case replace(file: String, mode: mode_t?, owner: uid_t?, group: gid_t?)
        case direct
    }

    /// As the user gave it, for messages.
    let path: String
    let kind: Kind

    /// Checks `path` as an output; throws a one-line error that says what to do instead.
    static func plan(_ path: String, option: String = "--output") throws(UsageError) -> OutputTarget {
        let shown = Printable.name(path)
        func refuse(_ problem: String) -> UsageError { UsageError("\(option) '\(shown)': \(problem)") }
        if path == "-" { return OutputTarget(path: path, kind: .standardOutput) }
        guard !path.isEmpty else { throw UsageError("\(option) needs a file path, or - for standard output") }
        guard !path.utf8.contains(0) else { throw refuse("a path cannot hold a NUL byte") }
        guard path.utf8.count < Int(PATH_MAX) else { throw refuse("the path is longer than \(PATH_MAX) bytes") }

        var info = stat()
        var linkInfo = stat()
        if lstat(path, &linkInfo) == 0 {
            let isLink = linkInfo.st_mode & S_IFMT == S_IFLNK
            guard stat(path, &info) == 0 else {
                throw refuse(
                    isLink
                        ? "is a symbolic link to a missing file; give the file itself"
                        : String(cString: strerror(errno)))
            }
            switch info.st_mode & S_IFMT {
            case S_IFDIR:
                throw refuse("is a directory; give a file path")
            case S_IFCHR, S_IFIFO:
                guard access(path, W_OK) == 0 else {
                    throw refuse("cannot be written (\(String(cString: strerror(errno))))")
                }
                return OutputTarget(path: path, kind: .direct)
            case S_IFREG:
                guard info.st_nlink <= 1 else {
                    throw refuse(
                        "has \(info.st_nlink) hard links, which replacing it would split; give a path with one link")
                }
                guard let file = isLink ? realPath(path) : path else { throw refuse("cannot follow the symbolic link") }
                try checkDirectory(of: file, refuse)
                return OutputTarget(
                    path: path,
                    kind: .replace(file: file, mode: info.st_mode & 0o7777, owner: info.st_uid, group: info.st_gid))
            default:
                throw refuse("is not a regular file, a character device or a FIFO")
            }
        }
        if linkInfo.st_mode & S_IFMT == S_IFLNK {
            throw refuse("is a symbolic link to a missing file; give the file itself")
        }
        try checkDirectory(of: path, refuse)
        return OutputTarget(path: path, kind: .replace(file: path, mode: nil, owner: nil, group: nil))
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The file's folder exists and takes new files, and the file's name fits the folder.
    private static func checkDirectory(of file: String, _ refuse: (String) -> UsageError) throws(UsageError) {
        let url = URL(fileURLWithPath: file)
        let directory = url.deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw refuse("directory '\(Printable.name(directory))' does not exist; create it first")
        }
        let nameLimit = pathconf(directory, Int32(_PC_NAME_MAX))
        if nameLimit > 0, url.lastPathComponent.utf8.count > nameLimit {
            throw refuse("the file name is longer than the \(nameLimit) bytes this file system allows")
        }
        // Creating a file is the only check that is sure (root passes access(2) on /proc).
        let probe = OutputWriter.temporaryPath(in: directory)
        let descriptor = open(probe, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw refuse(
                "cannot create files in '\(Printable.name(directory))' (\(String(cString: strerror(errno)))); "
                    + "choose another path")
        }
        close(descriptor)
        unlink(probe)
    }
}

extension OutputTarget {
    /// Whether both write one file (two names of it, or a link and its target).
    func writesSameFile(as other: OutputTarget) -> Bool {
        if kind == .standardOutput || other.kind == .standardOutput { return kind == other.kind }
        var mine = stat()
        var theirs = stat()
        if stat(path, &mine) == 0, stat(other.path, &theirs) == 0 {
            return mine.st_dev == theirs.st_dev && mine.st_ino == theirs.st_ino
        }
        return URL(fileURLWithPath: path).standardizedFileURL.path
            == URL(fileURLWithPath: other.path).standardizedFileURL.path
    }
}

extension OutputTarget {
    /// `--output` of a command whose one file is an HTML report (`explore`, `check`): a path
    /// ending in `.html` (or a device or FIFO), checked before anything runs.
    static func html(_ path: String) throws(UsageError) -> OutputTarget {
        let target = try plan(path)
        guard target.kind != .standardOutput else {
            throw UsageError("--output -: the table already goes to standard output; give an .html file")
        }
        let suffix = URL(fileURLWithPath: path).pathExtension.lowercased()
        if case .replace = target.kind, suffix != "html", suffix != "htm" {
            throw UsageError(
                "--output '\(Printable.name(path))': this command writes an HTML report; give a path ending in .html")
        }
        return target
    }
}
