/// `--strategy dfs`: every schedule of the program, one after another, as a depth-first walk of
/// the tree whose nodes are the steps and whose branches are the jobs held there (and a choice's
/// values). Each schedule replays the path to the deepest node with a branch not yet taken, takes
/// it, and goes on with the first job held at every step after; when no node has one left, every
/// schedule of the program has run.
///
/// With the reduction (sleep sets, Godefroid 1996), a branch is skipped where it can only reorder
/// steps that commute: two steps commute when neither touches what the other does (``StepFootprint``).
/// A job set aside at a node sleeps in the branches taken after it for as long as the steps
/// taken there commute with it; a schedule that reaches a node where every job held sleeps is
/// one already run, reordered, and stops there (counted as pruned).
public struct DepthFirstSearch: Sendable {
    /// A node on the path of the last schedule.
    struct Node: Sendable {
        /// The jobs held, each named by its ordinal in the schedule (``StepObserver``) × 256 + how
        /// many held before it share that ordinal (an actor's turn is known by the task that
        /// enqueued it, which may be held too), or a choice's values (-1 - value).
        var held: [Int]
        var chosen: Int
        /// What the step taken here touched in this schedule.
        var footprint = StepFootprint()
        /// What it touched in every schedule that took it: a step that makes a choice may touch
        /// more with one value than another.
        var taken = StepFootprint()
        /// Jobs that need not run here: set aside at a node above, for steps that commute with them.
        var sleep: [Int: StepFootprint] = [:]
        /// The branches already taken here, with what each touched.
        var done: [Int: StepFootprint] = [:]
    }

    public let reduces: Bool
    private(set) var path: [Node] = []
    /// Whether the last schedule was the last one: every branch of every node taken.
    public private(set) var isFinished = false
    /// Schedules stopped where every job held slept.
    public private(set) var pruned = 0

    public init(reduces: Bool) { self.reduces = reduces }

    /// The chooser for the next schedule: the path to the deepest node with a branch left, that branch taken.
    func walk() -> DepthFirstWalk { DepthFirstWalk(search: self) }

    /// Takes in what `walk` saw, and moves to the next branch; `false` once none is left.
    mutating func advance(after walk: DepthFirstWalk) -> Bool {
        path = walk.nodes
        if walk.pruned { pruned += 1 }
        while let last = path.last {
            var node = last
            node.done[node.held[node.chosen]] = node.taken
            // The next branch: the first job held here neither taken nor asleep.
            if let next = node.held.indices.first(where: {
                node.done[node.held[$0]] == nil && node.sleep[node.held[$0]] == nil
            }) {
                node.chosen = next
                node.footprint = StepFootprint()
                node.taken = StepFootprint()
                path[path.count - 1] = node
                return true
            }
            path.removeLast()
        }
        isFinished = true
        return false
    }
}

/// One schedule of a depth-first search: the search's path replayed, then the first job held
/// that does not sleep.
public struct DepthFirstWalk: ScheduleChooser {
    var nodes: [DepthFirstSearch.Node]
    /// How many of `nodes` are the path to replay.
    private let prefix: Int
    private let reduces: Bool
    private var observer = StepObserver()
    private(set) var pruned = false

    init(search: DepthFirstSearch) {
        nodes = search.path
        prefix = search.path.count
        reduces = search.reduces
    }

    /// The node of the last job chosen (a choice's node is not one).
    private var lastJob: Int?

    /// Records what the step just run touched: called by the executor after each job.
    public mutating func ran(_ footprint: StepFootprint) {
        guard let lastJob else { return }
        nodes[lastJob].footprint.merge(footprint)
        nodes[lastJob].taken.merge(footprint)
    }

    public mutating func choose(_ jobs: [HeldJob], step: Int) -> Int {
        var seen: [Int: Int] = [:]
        let held = jobs.map { job in
            if job.isChoice { return -1 - Int(UInt.max - job.id) }
            let ordinal = observer.ordinal(of: job.id)
            defer { seen[ordinal, default: 0] += 1 }
            return ordinal * 256 + min(seen[ordinal] ?? 0, 255)
        }
        if step < prefix {
            let node = nodes[step]
            // The replayed path must hold what it held before: the program is deterministic.
            guard node.held == held, node.held.indices.contains(node.chosen) else { return -1 }
            if !jobs[node.chosen].isChoice {
                nodes[step].footprint = StepFootprint()
                lastJob = step
            }
            return node.chosen
        }
        let isChoice = jobs.first?.isChoice == true
        // A new node of jobs sleeps on what the last job's node slept on, and on the branches
        // taken there before, each kept while it commutes with the step taken there. A choice's
        // values are no jobs: they never sleep.
        var sleep: [Int: StepFootprint] = [:]
        if reduces, !isChoice, let lastJob {
            let parent = nodes[lastJob]
            let taken = parent.held[parent.chosen]
            for (job, footprint) in parent.sleep.merging(parent.done, uniquingKeysWith: { first, _ in first })
            // A job that shares its name with another held (a second one has a count) never
            // sleeps: which of them a name means may change from node to node.
            where job != taken && job % 256 == 0 && seen[job / 256] == 1 && footprint.commutes(with: parent.footprint) {
                sleep[job] = footprint
            }
        }
        guard let chosen = held.indices.first(where: { sleep[held[$0]] == nil }) else {
            pruned = true
            return -1
        }
        nodes.append(DepthFirstSearch.Node(held: held, chosen: chosen, sleep: sleep))
        if !isChoice {
            lastJob = nodes.count - 1
        }
        return chosen
    }
}
