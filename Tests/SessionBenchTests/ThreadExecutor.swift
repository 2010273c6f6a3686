import Foundation

/// A task executor that runs every job on one thread of its own, so that a test can move a
/// task from one known thread to another (`withTaskExecutorPreference`). ``stop()`` ends the
/// thread once the jobs it holds have run.
final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    // SAFETY: `jobs` and `stopped` are touched only with `condition` locked.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var stopped = false

    init() {
        Thread { [self] in run() }.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.withLock {
            jobs.append(job)
            condition.signal()
        }
    }

    func stop() {
        condition.withLock {
            stopped = true
            condition.signal()
        }
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopped { condition.wait() }
            guard !jobs.isEmpty else {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
