#if HTTP
internal import HummingbirdCore
internal import Logging
internal import NIOCore
internal import NIOHTTP1

/// Hummingbird's HTTP/1.1 connection, with ``RequestTargetCheck`` where the request line and
/// headers are still as the client sent them, before they become the request the routes see.
struct WatchedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let base: HTTP1Channel

    /// A server of these, for `Application(server:)`.
    static func builder(_ configuration: HTTP1Channel.Configuration) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            WatchedHTTP1Channel(base: HTTP1Channel(responder: responder, configuration: configuration))
        }
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        base.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            // Right after the decoder, before the decoded request's conversion for the routes.
            try pipeline.addHandler(RequestTargetCheck(), position: .after(decoder))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
#endif
