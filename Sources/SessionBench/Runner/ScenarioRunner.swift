import Foundation
import Histogram
import SessionContract
import SessionMeasurement
import SessionOracle
import SessionStorage
import TokenServer

/// Runs scenarios against stores, in this process, with a watchdog.
public struct ScenarioRunner: Sendable {
    /// How long a phase may wait for the store's calls before they count as hung.
    public var hangTimeout: Duration
    /// How long a coordinator lets callers settle before releasing a held refresh.
    public var settle: Duration

    /// Called, on the watchdog's thread, when a store has blocked every thread of the
    /// cooperative pool so that the harness itself cannot run: with the run's verdict, as far
    /// as it got (hung, with where callers were stuck). Nothing in this process will run
    /// again; the measuring process writes the verdict and exits. By default the verdict is
    /// written to standard error.
    public var onStarvation: (@Sendable (ScenarioResult) -> Void)?

    /// Starts the session processes that scenarios over storage kill and restart; without
    /// one (a runner in a test or a user's program), those scenarios end in `error`, saying why.
    public var sessionProcesses: (any SessionProcessLauncher)?

    /// How stores reach the scenario's token server: `nil` in process (method calls), or a
    /// transport such as HTTP over loopback sockets. Scenarios over storage reach it through
    /// their session processes' pipes whatever this says.
    public var transport: (any EndpointTransport)?

    /// How `replicas`' processes reach the driver's token server: served over this transport (HTTP
    /// on loopback in a build that has it), or, when `nil`, through each process's pipe.
    public var network: (any NetworkTransport)?

    public init(hangTimeout: Duration = .seconds(5), settle: Duration = .milliseconds(1)) {
        self.hangTimeout = hangTimeout
        self.settle = settle
    }

    /// How long past a deadline the coordinator may be late before the pool counts as starved.
    var starvationGrace: Duration { max(.seconds(1), hangTimeout / 2) }
}
