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

/// Where the tool's own code says what a step touched (the saved session in memory, a
/// cancellation): the controlled executor listens in an exploring process
/// (``ControlledExecution/touch(_:)``); elsewhere nothing does, and a note costs one load.
enum StepTouches {
    /// Set once, before any task, by ``ControlledExecution/install()``.
    nonisolated(unsafe) static var hear: ((StepFootprint) -> Void)?

    static func note(_ footprint: StepFootprint) { hear?(footprint) }
}
