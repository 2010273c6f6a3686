import Foundation
import SessionStorage

/// Where the storage folders of `crash-restart` runs go. They hold simulated sessions, tokens in
/// clear on the plain backends, so they must not outlive the run: a process that starts measuring
/// processes owns a root for them (``rootVariable``) and removes it whatever becomes of them.
public enum StorageFolders {
    /// Names the folder a measuring process makes its storage folders in; unset, the system's
    /// temporary folder.
    public static let rootVariable = "SESSION_BENCH_STORAGE_ROOT"

    /// A new, empty folder (0700) for one run's storage; why not, with the system's cause, when
    /// none can be made.
    static func make() throws(Refusal) -> String {
        let root = ProcessInfo.processInfo.environment[rootVariable] ?? NSTemporaryDirectory()
        var template = Array((root + "/session-bench-storage-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw Refusal(description: FileSystem.message(errno)) }
        return String(cString: made)
    }

    /// Why a folder could not be made.
    struct Refusal: Error, CustomStringConvertible {
        let description: String
    }
}
