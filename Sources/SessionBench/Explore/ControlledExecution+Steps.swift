import Foundation
import SessionContract

// What a step of a driven schedule tells the scheduler beyond running: what it touched (for
// `dfs`'s reduction), the token clock to watch, and a wait on the driving thread nothing can end.
extension ControlledExecution {
    /// Notes that the step running touched `footprint` (the log of calls, the saved session, the
    /// store's objects from the tool's side): what `dfs`'s reduction knows of it beyond its kind.
    static func touch(_ footprint: StepFootprint) {
        #if compiler(>=6.3) && os(Linux)
            if isInstalled, ControlledExecutor.shared.isDriving { ControlledExecutor.shared.touched.merge(footprint) }
        #endif
    }

    /// What the exploring process does when a job blocks the driving thread in a wait nothing can
    /// end (a `DispatchSemaphore.wait()` with no timeout): it hears the call's name and the choices
    /// the schedule made so far (`nil`: a replayed schedule that no longer fits), and reports the
    /// deadlock; it never returns. Unset, the process stops with the call named on standard error.
    nonisolated(unsafe) public static var onBlocked: ((_ call: String, _ choices: [Int]?) -> Never)?

    /// Reports a wait on the driving thread that nothing can end (``onBlocked``).
    static func blocked(_ call: String) -> Never {
        #if compiler(>=6.3) && os(Linux)
            let choices = ControlledExecutor.shared.choicesSoFar?() ?? nil
        #else
            let choices: [Int]? = nil
        #endif
        if let onBlocked { onBlocked(call, choices) }
        FileHandle.standardError.write(Data("explore: \(call) blocked the scheduler's only thread\n".utf8))
        exit(70)
    }

    /// Watches `time` for the schedule being driven: a step that moves it touches everything.
    static func watch(_ time: ManualTime) {
        #if compiler(>=6.3) && os(Linux)
            if isInstalled, ControlledExecutor.shared.isDriving { ControlledExecutor.shared.watchedTimes.append(time) }
        #endif
    }
}
