#if HTTP
internal import HummingbirdCore
internal import NIOCore
internal import NIOHTTP1
import SessionSync
import Synchronization

/// Room for a client with a whole request when the connections the descriptors allow are all
/// taken: the connection that has waited longest without one is closed to make it.
///
/// The server takes at most ``limit`` connections (its descriptors less the ones it keeps for
/// itself); more wait in the kernel's queue. Slow clients that hold connections and never finish
/// a request (a slowloris, or a client that connects and sends nothing) would otherwise keep
/// every other client in that queue until their idle timeout. So when the server is full and
/// would accept another, it closes one connection that is waiting for a request: the one waiting
/// longest, among those that have sent no whole request since it was accepted or last answered
/// and have either been read from since (the bytes that came were not a whole request) or sent
/// nothing for ``grace`` (a request may be on its way). A connection whose request is being
/// answered is never closed; if all are, new clients wait for one to be answered.
final class ConnectionPressure: Sendable {
    /// How long a connection that has sent nothing since it started waiting is spared.
    static let grace: Duration = .milliseconds(250)

    private struct Connection {
        let channel: any Channel
        /// Since when it has waited for a whole request; `nil` while one is being answered.
        var waitingSince: ContinuousClock.Instant?
        /// Whether bytes came while it waited that were no whole request.
        var readWhileWaiting = false
        var closing = false
    }

    private struct State {
        /// Connections accepted and not yet closed (counted as the server accepts them).
        var open = 0
        var connections: [ObjectIdentifier: Connection] = [:]
        /// Whether the server waits for room to accept another connection.
        var wanted = false
        /// When a look for a connection to close is due, if one is.
        var lookAt: ContinuousClock.Instant?
    }

    let limit: Int
    private let state = Mutex(State())

    init(limit: Int) { self.limit = limit }

    /// What tells the server whether to accept another connection.
    var delegate: Delegate { Delegate(pressure: self) }

    struct Delegate: AvailableConnectionsDelegate {
        let pressure: ConnectionPressure
        mutating func connectionOpened() { pressure.state.withLock(visibleTo: pressure) { $0.open += 1 } }
        mutating func connectionClosed() { pressure.state.withLock(visibleTo: pressure) { $0.open -= 1 } }
        func isAcceptingNewConnections() -> Bool { pressure.hasRoom() }
    }

    /// A handler for one connection's pipeline, which tells this what the connection waits for.
    func watch() -> Watch { Watch(pressure: self) }

    /// Whether another connection may be accepted; if not, makes room.
    private func hasRoom() -> Bool {
        let room = state.withLock(visibleTo: self) { state in
            state.wanted = state.open >= limit
            return !state.wanted
        }
        if !room { makeRoom() }
        return room
    }

    /// Closes the connection that may be closed and has waited longest, if the server wants
    /// room and no closing one is making it; if none may be closed yet, looks again when the
    /// first may.
    private func makeRoom() {
        let now = ContinuousClock.now
        let (victim, lookIn) = state.withLock(visibleTo: self) { state -> ((any Channel)?, Duration?) in
            let closing = state.connections.values.count(where: \.closing)
            guard state.wanted, state.open - closing >= limit else { return (nil, nil) }
            var oldest: (id: ObjectIdentifier, since: ContinuousClock.Instant)?
            var soonest: ContinuousClock.Instant?
            for (id, connection) in state.connections where !connection.closing {
                guard let since = connection.waitingSince else { continue }
                let closable = connection.readWhileWaiting ? since : since + Self.grace
                if closable <= now {
                    if oldest.map({ since < $0.since }) ?? true { oldest = (id, since) }
                } else {
                    soonest = min(soonest ?? closable, closable)
                }
            }
            if let oldest {
                state.connections[oldest.id]?.closing = true
                return (state.connections[oldest.id]?.channel, nil)
            }
            guard let soonest, state.lookAt.map({ soonest < $0 }) ?? true else { return (nil, nil) }
            state.lookAt = soonest
            return (nil, soonest - now)
        }
        if let victim {
            // Closed on its event loop's next turn, never from inside a callback of a pipeline
            // (its own, at its end of input, is one): NIO does not expect a channel to close
            // under the call that is reading from it.
            victim.eventLoop.execute { victim.close(promise: nil) }
        }
        if let lookIn {
            Task {
                try? await Task.sleep(for: lookIn)
                self.state.withLock(visibleTo: self) { $0.lookAt = nil }
                self.makeRoom()
            }
        }
    }

    /// Changes what is known of connection `id`; then, if that may have made one closable,
    /// makes room if the server wants it.
    private func update(_ id: ObjectIdentifier, closable: Bool, _ change: (inout Connection) -> Void) {
        state.withLock(visibleTo: self) { state in
            if var connection = state.connections[id] {
                change(&connection)
                state.connections[id] = connection
            }
        }
        if closable { makeRoom() }
    }

    /// Watches one connection: its whole requests in, its answers out.
    final class Watch: ChannelDuplexHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias InboundOut = HTTPServerRequestPart
        typealias OutboundIn = HTTPServerResponsePart
        typealias OutboundOut = HTTPServerResponsePart

        let pressure: ConnectionPressure
        /// Whole requests not yet answered (below zero while an answer came before its request's end).
        private var owed = 0

        init(pressure: ConnectionPressure) { self.pressure = pressure }

        private var id: ObjectIdentifier { ObjectIdentifier(self) }

        func handlerAdded(context: ChannelHandlerContext) {
            let connection = Connection(channel: context.channel, waitingSince: .now)
            pressure.state.withLock(visibleTo: pressure) { $0.connections[id] = connection }
        }

        func handlerRemoved(context: ChannelHandlerContext) { forget() }

        func channelInactive(context: ChannelHandlerContext) {
            forget()
            context.fireChannelInactive()
        }

        private func forget() {
            pressure.state.withLock(visibleTo: pressure) { _ = $0.connections.removeValue(forKey: id) }
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if case .end = unwrapInboundIn(data) {
                owed += 1
                if owed == 1 { pressure.update(id, closable: false) { $0.waitingSince = nil } }
            }
            context.fireChannelRead(data)
        }

        func channelReadComplete(context: ChannelHandlerContext) {
            if owed <= 0 { pressure.update(id, closable: true) { $0.readWhileWaiting = true } }
            context.fireChannelReadComplete()
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            let ends = if case .end = unwrapOutboundIn(data) { true } else { false }
            context.write(data, promise: promise)
            guard ends else { return }
            owed -= 1
            if owed == 0 {
                pressure.update(id, closable: true) { connection in
                    connection.waitingSince = .now
                    connection.readWhileWaiting = false
                }
            }
        }
    }
}
#endif
