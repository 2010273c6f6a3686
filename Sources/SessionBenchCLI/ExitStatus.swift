/// The command line's exit statuses, as documented in `--help` and docs/commands.md.
public enum ExitStatus: Int32 {
    /// Every store was correct (and every threshold held).
    case success = 0
    /// An invariant failed, a store hung or crashed (or a threshold failed).
    case failed = 1
    /// Bad usage or input: unknown names, malformed values, unwritable paths, a baseline that
    /// cannot be compared.
    case usage = 2
    /// `compare --baseline`: every store passed, but a figure regressed significantly.
    case regression = 3
}

let exitStatusHelp = """
    Exit status: 0 when every store passed; 1 when an invariant failed or a store hung or \
    crashed; 2 for bad usage or input.
    """
