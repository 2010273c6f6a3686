#if HTTP
internal import Hummingbird
internal import NIOCore
import Synchronization

/// Tells a request in progress that its client hung up, without reading the connection.
///
/// A token request is decided in a task cancelled when the client goes (the server then sees a
/// dropped call, as the in-process server sees a cancelled one). Watching for that by reading
/// the request stream past the body would swallow a request pipelined behind it; this handler
/// sits in the connection's pipeline instead and hears the end of input, or the connection
/// closing, while every byte passes it untouched.
final class HangUpWatch: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    /// Never read: whatever arrives is passed on as it is.
    typealias InboundIn = ByteBuffer

    private let state = Mutex<(hungUp: Bool, actions: [@Sendable () -> Void])>((false, []))

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { hangUp() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        hangUp()
        context.fireChannelInactive()
    }

    /// Runs `action` when the client hangs up (at once if it already has).
    func onHangUp(_ action: @escaping @Sendable () -> Void) {
        let now = state.withLock { state in
            if state.hungUp { return true }
            state.actions.append(action)
            return false
        }
        if now { action() }
    }

    /// Forgets the actions registered so far: the request they guarded has been answered.
    func clear() { state.withLock { $0.actions.removeAll() } }

    private func hangUp() {
        let actions = state.withLock { state in
            state.hungUp = true
            defer { state.actions.removeAll() }
            return state.actions
        }
        for action in actions { action() }
    }
}

/// The request context `serve` and the transport route with: the basic one, and the
/// connection's ``HangUpWatch``.
struct ServeRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    /// The connection's hang-up watch.
    var hangUpWatch: HangUpWatch? {
        get async { try? await channel.pipeline.handler(type: HangUpWatch.self).get() }
    }
}
#endif
