import Foundation

/// Standard input, output and error as the tool's writes find them, even when a caller closed
/// them (`session-bench serve >&-`).
///
/// A descriptor left closed is the lowest free number: the next file, socket or event queue the
/// process opens would take it, and a write meant for standard output would go there. Each
/// closed one is taken at once by `/dev/null` opened read-only, so that nothing else can have
/// it and a write to it fails (EBADF) as a write to a closed descriptor does: the tool reports
/// it as it reports any output it could not write, in one line with exit 2.
enum StandardDescriptors {
    /// Fills each closed standard descriptor; call before anything opens a file.
    static func reserve() {
        for descriptor in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO] where fcntl(descriptor, F_GETFD) == -1 {
            let placeholder = open("/dev/null", O_RDONLY)
            guard placeholder >= 0 else { continue }
            if placeholder != descriptor {
                dup2(placeholder, descriptor)
                close(placeholder)
            }
        }
    }
}
