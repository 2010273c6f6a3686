#if HTTP
import Foundation
internal import NIOCore
internal import NIOHTTP1

/// Refuses, with 400, a request that does not say one thing about which host it is for
/// (RFC 9112 §3.2): more than one `Host` field, or a target that is neither a path
/// (origin form, `/admin/verdicts`) nor an `http` or `https` URL whose host is the one in
/// `Host` (absolute form, `http://127.0.0.1:8080/admin/verdicts`).
///
/// It reads the request line as the client wrote it, before it is turned into the request the
/// routes see (which keeps only the path of an absolute-form target and the first `Host`), so
/// that ``LoopbackGuard`` judges the host the request is really for. A refused request is
/// answered once every request before it on the connection has been, and the connection is
/// then closed: nothing after it is read.
final class RequestTargetCheck: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Requests passed on whose answers have not ended.
    private var unanswered = 0
    /// Why a request was refused; from then on nothing more is read.
    private var refusal: String?
    private var answered = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard refusal == nil else { return }
        if case .head(let head) = unwrapInboundIn(data) {
            if let problem = Self.problem(with: head) {
                refusal = problem
                if unanswered == 0 { refuse(context) }
                return
            }
            unanswered += 1
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let ends = if case .end = unwrapOutboundIn(data) { true } else { false }
        context.write(data, promise: promise)
        guard ends else { return }
        unanswered -= 1
        if unanswered == 0, refusal != nil { refuse(context) }
    }

    /// What is wrong with `head`'s host, or `nil`.
    static func problem(with head: HTTPRequestHead) -> String? {
        let hosts = head.headers["Host"]
        guard hosts.count <= 1 else { return "the request has more than one Host" }
        let target = head.uri
        if target.hasPrefix("/") || (target == "*" && head.method == .OPTIONS) { return nil }
        guard let authority = absoluteFormAuthority(target) else {
            return "the request target is neither a path nor an http URL"
        }
        if let host = hosts.first, host.lowercased() != authority.lowercased() {
            return "the request target names another host than Host"
        }
        return nil
    }

    /// The authority of an absolute-form target (`http://HOST:PORT/path?query`), or `nil` if
    /// `target` is not one, or names no host.
    static func absoluteFormAuthority(_ target: String) -> String? {
        let lowered = target.lowercased()
        guard let scheme = ["http://", "https://"].first(where: { lowered.hasPrefix($0) }) else { return nil }
        let rest = target.dropFirst(scheme.count)
        let authority = rest.prefix { !"/?#".contains($0) }
        guard !authority.isEmpty, !authority.contains("@"), !rest.dropFirst(authority.count).hasPrefix("#") else {
            return nil
        }
        return String(authority)
    }

    /// Answers 400 with the reason, in the token endpoint's error shape, and closes.
    private func refuse(_ context: ChannelHandlerContext) {
        guard !answered, let refusal else { return }
        answered = true
        let body = (try? JSONEncoder().encode(OAuthWire.ErrorAnswer(error: "invalid_request", errorDescription: refusal)))
            ?? Data()
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Content-Length", value: String(body.count))
        headers.add(name: "Cache-Control", value: "no-store")
        headers.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .badRequest, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in loopBound.value.close(promise: nil) }
    }
}
#endif
