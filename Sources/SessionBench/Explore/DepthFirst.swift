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
        /// The jobs held (by ordinal in the schedule, ``StepObserver``), or a choice's values (-1 - value).
        var held: [Int]
        var chosen: Int
        /// What the step taken here touched.
        var footprint = StepFootprint()
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
            node.done[node.held[node.chosen]] = node.footprint
            // The next branch: the first job held here neither taken nor asleep.
            if let next = node.held.indices.first(where: {
                node.done[node.held[$0]] == nil && node.sleep[node.held[$0]] == nil
            }) {
                node.chosen = next
                node.footprint = StepFootprint()
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
    }

    public mutating func choose(_ jobs: [HeldJob], step: Int) -> Int {
        let held = jobs.map { $0.isChoice ? -1 - Int(UInt.max - $0.id) : observer.ordinal(of: $0.id) }
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
            where job != taken && footprint.commutes(with: parent.footprint) {
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

/// What one step touched, as far as the scheduler can see it: the reduction's model of
/// dependence. Two steps commute unless both touch one of these.
public struct StepFootprint: Sendable, Equatable {
    /// The store's own state, which the scheduler cannot see into: touched by every step that
    /// may run the store's code.
    public var store = false
    /// What the tool itself keeps: the log of calls, the server, the saved session, the Dispatch
    /// queues' order. Every step off the main actor touches it.
    public var harness = false
    /// The main actor's queue: a step that hands it a job (whose order among them is the order they run in).
    public var mainQueue = false
    /// Virtual time: a timer fired (time moved to its deadline), or was set (its deadline counts
    /// from the time now); which timers may fire next depends on both.
    public var time = false
    /// Everything: the token clock moved, or a task that waits for the others to settle ran.
    public var everything = false

    public init(
        store: Bool = false, harness: Bool = false, mainQueue: Bool = false, time: Bool = false,
        everything: Bool = false
    ) {
        self.store = store
        self.time = time
        self.harness = harness
        self.mainQueue = mainQueue
        self.everything = everything
    }

    mutating func merge(_ other: StepFootprint) {
        store = store || other.store
        harness = harness || other.harness
        mainQueue = mainQueue || other.mainQueue
        time = time || other.time
        everything = everything || other.everything
    }

    func commutes(with other: StepFootprint) -> Bool {
        !(everything || other.everything) && !(store && other.store) && !(harness && other.harness)
            && !(mainQueue && other.mainQueue) && !(time && other.time)
    }
}
