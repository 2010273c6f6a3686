#if HTTP
import Foundation
import Testing

/// `session-bench serve` as an attacker on the same machine, a hostile web page or a careless
/// client meets it: foreign Host and Origin values, guessable tokens, pipelined requests, stops
/// while requests are held, outputs no one reads, and more connections than descriptors. Each
/// test runs a `serve` of its own, so they run side by side: most of their time is waiting (a
/// grace, a reader that never comes).
@Suite(.tags(.slow), .skippedInQuickRun, .timeLimit(.minutes(30)),
    .disabled(if: TestEnvironment.isThreadSanitized, Comment(rawValue: TestEnvironment.processSuiteSkipped)))
struct ServeHostileTests {
    /// A running `serve` and its port.
    func serve(_ arguments: [String] = [], launcher: [String] = []) async throws -> (ToolRun, Int) {
        let run = try ToolRun(["serve", "--port", "0"] + arguments, launcher: launcher)
        let port = try #require(await run.servedPort(), "serve printed no port: \(run.stderr)")
        return (run, port)
    }

    /// One raw request, as curl would send it but with any Host and headers; the parsed answer.
    func raw(_ port: Int, _ head: String, body: String = "") async -> Exchange? {
        guard let socket = RawSocket(port: port) else { return nil }
        let length = body.isEmpty ? "" : "Content-Length: \(body.utf8.count)\r\n"
        guard socket.transmit(head + length + "Connection: close\r\n\r\n" + body) else { return nil }
        return Exchange.parse(await socket.receive(timeout: 20).text)
    }

    static let form = "Content-Type: application/x-www-form-urlencoded\r\n"

    /// The number a verdicts field holds, as `GET /admin/verdicts?format=json` says it.
    func count(_ name: String, _ port: Int) async -> Int {
        let answer = await Exchange.send(port: port, "GET", "/admin/verdicts?format=json")
        return (answer?.json?["verdicts"] as? [String: Any])?[name] as? Int ?? 0
    }

    @Test("only loopback Host values are served; a rebinding page cannot stop it; a foreign Origin cannot post")
    func hostAndOrigin() async throws {
        let (serve, port) = try await serve()
        // Loopback names, with the port, are served.
        for host in ["127.0.0.1:\(port)", "localhost:\(port)", "[::1]:\(port)"] {
            let answer = await raw(port, "GET /.well-known/oauth-authorization-server HTTP/1.1\r\nHost: \(host)\r\n")
            #expect(answer?.status == 200, "Host: \(host): \(answer?.head ?? "no answer")")
            #expect((answer?.json?["issuer"] as? String) == "http://\(host)")
        }
        // Anything else is refused before a route runs: never reflected into an answer.
        for host in ["attacker.example:\(port)", "attacker.example", "127.0.0.1:1", #"a", error="x"#, "127.0.0.1.attacker.example:\(port)"] {
            let metadata = await raw(port, "GET /.well-known/oauth-authorization-server HTTP/1.1\r\nHost: \(host)\r\n")
            #expect([400, 421].contains(metadata?.status ?? 0), "Host: \(host): \(metadata?.head ?? "no answer")")
            #expect(metadata?.body.contains("attacker") != true && metadata?.body.contains("error=") != true)
            let resource = await raw(port, "GET /resource HTTP/1.1\r\nHost: \(host)\r\nAuthorization: Bearer forged\r\n")
            #expect([400, 421].contains(resource?.status ?? 0), "Host: \(host): \(resource?.head ?? "no answer")")
            #expect(resource?.header("WWW-Authenticate")?.contains("x\"") != true, "\(resource?.head ?? "")")
            let stop = await raw(port, "POST /admin/shutdown HTTP/1.1\r\nHost: \(host)\r\nX-Session-Bench-Admin: stop\r\n")
            #expect([400, 421].contains(stop?.status ?? 0), "a DNS-rebinding page stopped serve: \(stop?.head ?? "no answer")")
        }
        let missing = await raw(port, "GET /resource HTTP/1.1\r\n")
        #expect(missing?.status == 400, "no Host: \(missing?.head ?? "no answer")")
        // A page of another origin, with the right Host (the browser sends it): no token, no stop.
        let login = "grant_type=password&username=u&password=p"
        for origin in ["http://attacker.example", "null", "http://127.0.0.1:\(port + 1)"] {
            let token = await raw(
                port, "POST /oauth/token HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nOrigin: \(origin)\r\n" + Self.form, body: login)
            #expect(token?.status == 403, "Origin: \(origin): \(token?.head ?? "no answer")")
            let stop = await raw(
                port, "POST /admin/shutdown HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nOrigin: \(origin)\r\nX-Session-Bench-Admin: stop\r\n")
            #expect(stop?.status == 403, "Origin: \(origin): \(stop?.head ?? "no answer")")
        }
        #expect(await count("signIns", port) == 0, "no cross-origin sign-in reached the server")
        // Its own origin, and a client that sends none, are served.
        let own = await raw(
            port, "POST /oauth/token HTTP/1.1\r\nHost: localhost:\(port)\r\nOrigin: http://localhost:\(port)\r\n" + Self.form, body: login)
        #expect(own?.status == 200, "\(own?.head ?? "no answer")")
        #expect(await Exchange.token(port: port, login)?.status == 200)
        kill(serve.pid, SIGTERM)
        #expect(await serve.exitStatus(waitingUpTo: 30) == 0, "\(serve.stderr)")
    }

    @Test("a request names one host: two Host fields, or a target URL of another host, get 400 and reach no route")
    func oneHostPerRequest() async throws {
        let (serve, port) = try await serve()
        let own = "127.0.0.1:\(port)"
        let stop = "X-Session-Bench-Admin: stop\r\n"
        for head in [
            "GET /admin/verdicts HTTP/1.1\r\nHost: \(own)\r\nHost: attacker.example\r\n",
            "GET /admin/verdicts HTTP/1.1\r\nHost: attacker.example\r\nHost: \(own)\r\n",
            "GET /admin/verdicts HTTP/1.1\r\nHost: \(own)\r\nHost: \(own)\r\n",
            "GET http://attacker.example/admin/verdicts HTTP/1.1\r\nHost: \(own)\r\n",
            "GET http://attacker.example:\(port)/admin/verdicts HTTP/1.1\r\nHost: \(own)\r\n",
            "POST /admin/shutdown HTTP/1.1\r\nHost: \(own)\r\nHost: attacker.example\r\n" + stop,
            "POST http://attacker.example/admin/shutdown HTTP/1.1\r\nHost: \(own)\r\n" + stop,
        ] {
            let answer = await raw(port, head)
            let line = head.prefix { $0 != "\r" }
            #expect(answer?.status == 400, "\(line): \(answer?.head ?? "no answer")")
            #expect(answer?.body.contains("attacker") == false, "\(line): \(answer?.body ?? "")")
        }
        // An absolute-form target of this server, with its Host, is served.
        let absolute = await raw(port, "GET http://\(own)/admin/verdicts HTTP/1.1\r\nHost: \(own)\r\n")
        #expect(absolute?.status == 200, "\(absolute?.head ?? "no answer")")
        // A refused request pipelined behind a good one: the good one is answered first, then the refusal.
        let socket = try #require(RawSocket(port: port))
        socket.transmit(
            "GET /admin/verdicts HTTP/1.1\r\nHost: \(own)\r\n\r\n"
                + "GET http://attacker.example/admin/verdicts HTTP/1.1\r\nHost: \(own)\r\n\r\n")
        let both = await socket.receive(timeout: 20)
        let statuses = both.text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { $0.prefix(3) }
        #expect(statuses == ["200", "400"] && both.closed, "\(both.text.prefix(400))")
        // None of them stopped it.
        #expect(await Exchange.send(port: port, "GET", "/admin/verdicts")?.status == 200, "serve stopped")
        kill(serve.pid, SIGTERM)
        #expect(await serve.exitStatus(waitingUpTo: 30) == 0, "\(serve.stderr)")
    }

    @Test("tokens are unguessable: two fresh serves issue different tokens; --seed makes them reproducible, and says so")
    func tokensFromACSPRNG() async throws {
        func firstGrant(_ arguments: [String]) async throws -> (access: String, refresh: String, stderr: String) {
            let (serve, port) = try await serve(arguments)
            let answer = try #require(await Exchange.token(port: port, "grant_type=password&username=u&password=p"))
            let json = try #require(answer.json)
            kill(serve.pid, SIGTERM)
            _ = await serve.exitStatus(waitingUpTo: 30)
            return (try #require(json["access_token"] as? String), try #require(json["refresh_token"] as? String), serve.stderr)
        }
        let one = try await firstGrant([]), two = try await firstGrant([])
        #expect(one.access != two.access && one.refresh != two.refresh, "the same first tokens from two fresh serves")
        let seeded = try await firstGrant(["--seed", "7"]), again = try await firstGrant(["--seed", "7"])
        #expect(seeded.access == again.access && seeded.refresh == again.refresh, "--seed reproduces the tokens")
        #expect(seeded.stderr.contains("reproducible"), "\(seeded.stderr)")
        #expect(!one.stderr.contains("reproducible"), "\(one.stderr)")
    }

    @Test("two token requests pipelined in one write: both are answered")
    func pipelinedTokenRequests() async throws {
        let (serve, port) = try await serve()
        let socket = try #require(RawSocket(port: port))
        let body = "grant_type=password&username=u&password=p"
        let request =
            "POST /oauth/token HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n" + Self.form + "Content-Length: \(body.utf8.count)\r\n\r\n" + body
        #expect(socket.transmit(request + request))
        var text = ""
        for _ in 0..<2 where text.components(separatedBy: "HTTP/1.1 200").count < 3 {
            text += await socket.receive(until: "}", timeout: 20).text
            if text.components(separatedBy: "HTTP/1.1 ").count >= 3 { break }
        }
        let answers = text.components(separatedBy: "HTTP/1.1 ").dropFirst()
        #expect(answers.count == 2, "\(answers.count) answer(s) to 2 pipelined requests: \(text.prefix(300))")
        #expect(answers.allSatisfy { $0.hasPrefix("200") }, "\(text.prefix(300))")
        #expect(await count("signIns", port) == 2)
        kill(serve.pid, SIGTERM)
        _ = await serve.exitStatus(waitingUpTo: 30)
    }

    @Test("SIGTERM or SIGINT while a request is held: stopped within the grace, with the verdicts; a second SIGINT too", arguments: [
        (["--latency", "30s"], "signIns", [SIGTERM]),
        (["--timeout-rate", "1", "--timeout-after", "1h"], "refreshCalls", [SIGINT]),
        (["--latency", "30s"], "signIns", [SIGINT, SIGINT]),
    ])
    func stopsWhileARequestIsHeld(arguments: [String], held: String, signals: [Int32]) async throws {
        let (serve, port) = try await serve(arguments)
        let socket = try #require(RawSocket(port: port))
        let body: String
        if held == "refreshCalls" {
            let signedIn = try #require(await Exchange.token(port: port, "grant_type=password&username=u&password=p")?.json)
            body = "grant_type=refresh_token&refresh_token=\(try #require(signedIn["refresh_token"] as? String))"
        } else {
            body = "grant_type=password&username=u&password=p"
        }
        socket.transmit(
            "POST /oauth/token HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n" + Self.form + "Content-Length: \(body.utf8.count)\r\n\r\n" + body)
        // The server has the request: the ledger holds it while its answer is held back.
        let deadline = Date().addingTimeInterval(20)
        while await count(held, port) < 1, Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(await count(held, port) >= 1)
        for signal in signals { kill(serve.pid, signal) }
        // The grace is 5 s; a held request (30 s, or an hour) must not keep it.
        let status = await serve.exitStatus(waitingUpTo: 20)
        #expect(status == 0, "status \(status.map(String.init) ?? "still running after 20 s"): \(serve.stderr)")
        #expect(serve.stdout.contains("verdict: PASS"), "\(serve.stdout)")
    }

    @Test("--output to a FIFO no process reads: serve still stops on SIGTERM, in bounded time, saying why")
    func outputToAFIFOWithoutReader() async throws {
        let folder = try ToolProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let fifo = folder.appendingPathComponent("verdicts.pipe").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let (serve, _) = try await serve(["--output", "csv:" + fifo])
        kill(serve.pid, SIGTERM)
        let status = await serve.exitStatus(waitingUpTo: 30)
        #expect(status == 2, "status \(status.map(String.init) ?? "still running after 30 s"): \(serve.stderr)")
        #expect(serve.stderr.contains("no process reads"), "\(serve.stderr)")
        #expect(serve.stderr.contains("verdict: PASS"), "the verdicts are not lost: \(serve.stderr)")
    }

    @Test("--output /dev/full: exit 2 in one line that still carries the verdict")
    func outputToAFullDevice() async throws {
        let (serve, port) = try await serve(["--output", "/dev/full"])
        _ = await Exchange.token(port: port, "grant_type=password&username=u&password=p")
        kill(serve.pid, SIGTERM)
        #expect(await serve.exitStatus(waitingUpTo: 30) == 2, "\(serve.stderr)")
        let lines = serve.stderr.split(separator: "\n").filter { $0.hasPrefix("session-bench: error:") }
        #expect(lines.count == 1 && lines[0].contains("/dev/full") && lines[0].contains("verdict: PASS"), "\(serve.stderr)")
        #expect(serve.stdout.split(separator: "\n").count == 1, "only the listening line: \(serve.stdout)")
    }

    @Test("standard output that cannot take the port line: one line on standard error, exit 2, never a signal",
        arguments: [ToolProcess.StandardOutput.path("/dev/full"), .closed, .pipeWithoutReader])
    func unwritableStandardOutput(stdout: ToolProcess.StandardOutput) async throws {
        let serve = try ToolRun(["serve", "--port", "0"], stdout: stdout)
        let status = await serve.exitStatus(waitingUpTo: 60)
        #expect(status == 2, "serve \(stdout): status \(status.map(String.init) ?? "still running after 60 s"): \(serve.stderr)")
        let lines = serve.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("cannot write to standard output"), "serve \(stdout): \(serve.stderr)")
    }

    @Test("1,000 connections under an open-file limit of 128: no signal, every connection answered or refused, and it keeps serving")
    func soakUnderADescriptorLimit() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit") else { return }
        raiseOpenFileLimit()
        try #require(openFileLimit() >= 1_200, "this test needs 1,200 open files; the limit is \(openFileLimit())")
        let (serve, port) = try await serve([], launcher: ["/usr/bin/prlimit", "--nofile=128"])
        var sockets: [RawSocket] = []
        for _ in 0..<1_000 {
            guard let socket = RawSocket(port: port) else { continue }
            socket.transmit("GET /admin/verdicts HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n")
            sockets.append(socket)
        }
        var answered = 0
        for socket in sockets {
            let answer = await socket.receive(until: "calls:", timeout: 20)
            if answer.text.hasPrefix("HTTP/1.1 200") { answered += 1 }
            // Done with it: a client that has its answer hangs up, and the next one is served.
            _ = shutdown(socket.descriptor, Int32(SHUT_RDWR))
        }
        sockets.removeAll()
        #expect(answered == 1_000, "\(answered) of 1,000 connections answered")
        let after = await Exchange.send(port: port, "GET", "/admin/verdicts")
        #expect(after?.status == 200, "serve still answers")
        kill(serve.pid, SIGTERM)
        let status = await serve.exitStatus(waitingUpTo: 30)
        #expect(status == 0, "status \(status.map(String.init) ?? "still running"): \(serve.stderr)")
        #expect(serve.stdout.contains("verdict: PASS"))
    }

    @Test("500 slow connections under an open-file limit of 128: a client with a whole request is answered while they are held")
    func slowConnectionsDoNotStall() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit") else { return }
        raiseOpenFileLimit()
        try #require(openFileLimit() >= 700, "this test needs 700 open files; the limit is \(openFileLimit())")
        // Idle connections are not closed for an hour: only making room can let the client in.
        let (serve, port) = try await serve(["--idle-timeout", "3600"], launcher: ["/usr/bin/prlimit", "--nofile=128"])
        var slow: [RawSocket] = []
        for index in 0..<500 {
            guard let socket = RawSocket(port: port) else { continue }
            // Half send the start of a request and never finish it, half send nothing.
            if index.isMultiple(of: 2) { socket.transmit("GET /admin/verdicts HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n") }
            slow.append(socket)
        }
        #expect(slow.count == 500, "\(slow.count) of 500 slow connections made")
        // Queued behind all of them. The limit bounds a hang, not a speed.
        let answer = await Exchange.send(port: port, "GET", "/admin/verdicts", timeout: 120)
        #expect(answer?.status == 200, "no answer while 500 slow connections were held: \(answer?.head ?? "none")")
        kill(serve.pid, SIGTERM)
        let status = await serve.exitStatus(waitingUpTo: 30)
        #expect(status == 0, "status \(status.map(String.init) ?? "still running"): \(serve.stderr)")
        slow.removeAll()
    }
}
#endif
