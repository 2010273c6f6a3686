#if HTTP
import Foundation
import Testing


/// `session-bench serve` as a user runs it: the port it prints, the verdicts it prints when it
/// stops, and how it stops.
@Suite(.tags(.slow), .skippedInQuickRun, .serialized, .timeLimit(.minutes(30))) struct ServeCommandTests {
    func signIn(_ port: Int) async throws -> String {
        let answer = try #require(await Exchange.token(port: port, "grant_type=password&username=u&password=p"))
        return try #require(answer.json?["refresh_token"] as? String)
    }

    @Test("SIGINT: a client that refreshed once per expiry gets PASS and exit 0", arguments: [SIGINT, SIGTERM])
    func cleanStop(signal: Int32) async throws {
        let serve = try ToolRun(["serve", "--port", "0", "--format", "csv", "--token-lifetime", "1s"])
        let port = try #require(await serve.servedPort(), "serve printed no port: \(serve.stderr)")
        let refresh = try await signIn(port)
        // Refreshed when the token has expired: once, as a client should.
        try await Task.sleep(for: .milliseconds(1_200))
        #expect(await Exchange.token(port: port, "grant_type=refresh_token&refresh_token=\(refresh)")?.status == 200)
        kill(serve.pid, signal)
        let status = await serve.exitStatus(waitingUpTo: 30)
        #expect(status == 0, "\(serve.stderr)")
        let lines = serve.stdout.split(separator: "\n")
        #expect(lines.count == 3, "\(serve.stdout)")
        #expect(lines.dropFirst().first?.hasPrefix("verdict,sign_ins,clients,overlapping_client_grants,refresh_calls") == true)
        #expect(lines.last?.hasPrefix("pass,1,0,0,1,1,1,1.0000,") == true, "\(serve.stdout)")
        #expect(!serve.stdout.contains(refresh), "no token is printed")
    }

    @Test("a reused refresh token fails the verdict: exit 1, with what failed")
    func reuseFails() async throws {
        let serve = try ToolRun(["serve"])
        let port = try #require(await serve.servedPort(), "serve printed no port: \(serve.stderr)")
        let refresh = try await signIn(port)
        for _ in 0..<2 { _ = await Exchange.token(port: port, "grant_type=refresh_token&refresh_token=\(refresh)") }
        kill(serve.pid, SIGINT)
        #expect(await serve.exitStatus(waitingUpTo: 30) == 1)
        #expect(serve.stdout.contains("verdict: FAIL"))
        #expect(serve.stdout.contains("FAIL  no-reuse"), "\(serve.stdout)")
        #expect(serve.stdout.contains("FAIL  single-flight"), "\(serve.stdout)")
    }

    @Test("POST /admin/shutdown stops it as SIGINT does, answering with the verdicts")
    func adminShutdown() async throws {
        let serve = try ToolRun(["serve", "--port", "0"])
        let port = try #require(await serve.servedPort())
        _ = try await signIn(port)
        let refused = try #require(await Exchange.send(port: port, "POST", "/admin/shutdown"))
        #expect(refused.status == 403, "a cross-site form post cannot stop it")
        let answer = try #require(
            await Exchange.send(port: port, "POST", "/admin/shutdown?format=json", headers: ["X-Session-Bench-Admin": "stop"]))
        #expect(answer.json?["verdict"] as? String == "pass")
        #expect(await serve.exitStatus(waitingUpTo: 30) == 0)
        #expect(serve.stdout.contains("verdict: PASS"))
    }

    @Test("bad input: one line, exit 2", arguments: [
        (["serve", "--host", "0.0.0.0"], "loopback"),
        (["serve", "--port", "70000"], "--port"),
        (["serve", "--latency", "fast"], "--latency"),
        (["serve", "--transient-rate", "0.7", "--timeout-rate", "0.7"], "sum"),
        (["compare", "--transport", "http", "--scenario", "crash-restart"], "--transport http"),
        (["compare", "--transport", "carrier-pigeon"], "--transport"),
    ])
    func badInput(arguments: [String], mention: String) async throws {
        let run = try await ToolRun.finish(arguments, timeout: 60)
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
        #expect(run.stderr.contains(mention), "\(run.stderr)")
    }

    @Test("a port already taken is a one-line error, exit 2")
    func portTaken() async throws {
        let first = try ToolRun(["serve"])
        let port = try #require(await first.servedPort())
        let second = try await ToolRun.finish(["serve", "--port", "\(port)"], timeout: 60)
        #expect(second.status == 2)
        #expect(second.stderr.contains("could not listen on 127.0.0.1:\(port)"), "\(second.stderr)")
        kill(first.pid, SIGTERM)
        #expect(await first.exitStatus(waitingUpTo: 30) == 0)
    }
}
#endif
