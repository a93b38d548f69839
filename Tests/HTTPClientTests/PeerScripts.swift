import HTTPClient
import TestSupport

/// Echoes the request back: method, path and selected headers as response headers, the body as the body.
@Sendable func echoScript(_ request: PeerRequest) -> PeerAction {
    .respond(
        status: 200,
        headers: [
            ("X-Method", request.method),
            ("X-Path", request.path),
            ("X-Echo", request.header("X-Test") ?? ""),
            ("X-User-Agent", request.header("User-Agent") ?? ""),
            ("X-Expect", request.header("Expect") ?? "none"),
            ("Content-Type", "application/octet-stream"),
        ],
        body: request.body
    )
}

/// Runs `body` with a fresh peer and client, stopping both afterwards.
func withScriptedPeer<Result>(
    configuration: Client.Configuration = Client.Configuration(),
    _ script: @escaping @Sendable (PeerRequest) -> PeerAction,
    _ body: (ScriptedPeer, Client) async throws -> Result
) async throws -> Result {
    let peer = try ScriptedPeer(script)
    let client = try Client(configuration: configuration)
    defer {
        client.shutdown()
        peer.stop()
    }
    return try await body(peer, client)
}

/// A port on 127.0.0.1 that refuses connections: a peer's port after the peer stopped.
func refusedPort() throws -> Int {
    let peer = try ScriptedPeer { _ in .closeWithoutResponse }
    let port = peer.port
    peer.stop()
    return port
}

/// Polls `condition` every 10 ms for up to `seconds`.
func pollUntil(within seconds: Double = 5, _ condition: () -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if condition() {
            return true
        }
        try await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}
