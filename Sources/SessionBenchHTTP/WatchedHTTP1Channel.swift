#if HTTP
internal import HummingbirdCore
internal import Logging
internal import NIOCore
internal import NIOHTTP1

/// Hummingbird's HTTP/1.1 connection, with two handlers where the request line and headers
/// are still as the client sent them, before they become the request the routes see:
/// ``RequestTargetCheck`` (which host a request is for) and ``ConnectionPressure/Watch``
/// (whether the connection waits for a request or has one being answered).
struct WatchedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let base: HTTP1Channel
    let pressure: ConnectionPressure

    /// A server of these, for `Application(server:)`.
    static func builder(_ configuration: HTTP1Channel.Configuration, pressure: ConnectionPressure) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            WatchedHTTP1Channel(base: HTTP1Channel(responder: responder, configuration: configuration), pressure: pressure)
        }
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let pressure = self.pressure
        return base.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            // Each right after the decoder: the watch first, then the check, then the decoded
            // request's conversion for the routes.
            try pipeline.addHandler(RequestTargetCheck(), position: .after(decoder))
            try pipeline.addHandler(pressure.watch(), position: .after(decoder))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
#endif
