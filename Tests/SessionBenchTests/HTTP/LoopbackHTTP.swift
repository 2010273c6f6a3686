#if HTTP
import Foundation

/// One HTTP/1.1 exchange over a connection of its own, as bytes: what the tests send `serve`.
struct Exchange {
    let status: Int
    /// The status line and headers.
    let head: String
    let body: String

    /// The body as a JSON object, if it is one.
    var json: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]
    }

    /// A header's value (the first of that name, case-insensitively).
    func header(_ name: String) -> String? {
        for line in head.components(separatedBy: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            if line[..<colon].lowercased() == name.lowercased() {
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    /// Sends one request with `Connection: close` and reads the answer; `nil` if there was none.
    static func send(
        port: Int, _ method: String, _ path: String, headers: [String: String] = [:], body: String? = nil,
        timeout: Double = 20
    ) async -> Exchange? {
        guard let socket = RawSocket(port: port) else { return nil }
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if let body { text += "Content-Length: \(body.utf8.count)\r\n" }
        text += "\r\n" + (body ?? "")
        guard socket.transmit(text) else { return nil }
        return parse(await socket.receive(timeout: timeout).text)
    }

    /// A form POST to the token endpoint.
    static func token(port: Int, _ form: String, headers: [String: String] = [:]) async -> Exchange? {
        await send(
            port: port, "POST", "/oauth/token",
            headers: ["Content-Type": "application/x-www-form-urlencoded"].merging(headers) { $1 }, body: form)
    }

    /// A GET of the protected resource with `token` as the bearer.
    static func resource(port: Int, token: String) async -> Exchange? {
        await send(port: port, "GET", "/resource", headers: ["Authorization": "Bearer \(token)"])
    }

    static func parse(_ text: String) -> Exchange? {
        guard let split = text.range(of: "\r\n\r\n") else { return nil }
        let head = String(text[..<split.lowerBound])
        let words = head.split(separator: " ", maxSplits: 2)
        guard words.count >= 2, words[0].hasPrefix("HTTP/1."), let status = Int(words[1]) else { return nil }
        return Exchange(status: status, head: head, body: String(text[split.upperBound...]))
    }
}
#endif
