#if HTTP
internal import HTTPTypes
internal import Hummingbird
internal import HummingbirdCore
internal import NIOCore
import SessionBench
import SessionContract
import SessionOracle
import TokenServer

/// What `serve` says about its clients while it runs.
extension TokenRoutes {
    // MARK: Admin

    /// The ledger's verdicts so far: `?format=table|csv|json|markdown` (table by default).
    func verdicts(_ request: Request, server: TokenServer) -> Response {
        let verdicts = LedgerVerdicts(ledger: server.ledger, tokenLifetime: server.configuration.tokenLifetime)
        let format = request.uri.queryParameters.get("format") ?? "table"
        let text: String
        let type: String
        switch format {
        case "json":
            text = (try? verdicts.json()) ?? "{}"
            type = "application/json"
        case "csv":
            text = verdicts.csv()
            type = "text/csv"
        case "markdown":
            text = verdicts.markdown()
            type = "text/markdown"
        case "table":
            text = verdicts.table()
            type = "text/plain; charset=utf-8"
        default:
            return Self.error(.badRequest, "invalid_request", "format must be table, csv, json or markdown")
        }
        return Response(
            status: .ok, headers: [.contentType: type, .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
#endif
