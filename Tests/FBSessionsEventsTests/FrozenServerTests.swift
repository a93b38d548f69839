import FBSessionsStorage
import Foundation
import LocalCluster
import Postgres
import TestSupport
import Testing

/// The whole service on a private cluster that the test freezes (SIGSTOP of every server process, as a hung host)
/// and thaws: requests answer 503 with `Retry-After` within `FBS_STATEMENT_TIMEOUT` plus the margin, none waits
/// behind another, and the service works again after SIGCONT without a restart.
@Suite("The service on a frozen server", .serialized)
struct FrozenServerTests {
    private static let canRunClusters =
        PostgresBinaries.isAvailable || ProcessInfo.processInfo.environment["CI"] == "true"

    @Test(.enabled(if: canRunClusters && TestDatabase.isEnabled)) func requestsAnswerInTimeAndTheServiceRecovers()
        async throws
    {
        let directory = "/tmp/frozen-service-\(UUID().uuidString.prefix(8).lowercased())"
        let cluster = try Cluster(directory: directory, port: Cluster.freePort(), options: .init(durable: false))
        defer { try? cluster.remove() }
        _ = try cluster.initializeIfNeeded()
        try cluster.start()
        try cluster.createDatabase("fbsessions")
        let url = cluster.connectionURL(database: "fbsessions")
        let migrations = try TestDatabase.migrations()
        _ = try await onThread {
            let connection = try PostgresConnection(connectionString: url)
            defer { connection.close() }
            return try Migrator(migrations: migrations).migrate(on: connection).count
        }
        let stack = try await ServiceStack(
            .init(databaseURL: url, statementTimeout: 1, acquireTimeout: 2, poolSize: 4, keyCacheTTL: 300))
        var first = try await stack.login(owner: "owner-1", token: try stack.userToken().token)
        let a = try #require(first.json["id"] as? String)
        first = try await stack.login(owner: "owner-2", token: try stack.userToken(name: "Grace Hopper").token)
        let b = try #require(first.json["id"] as? String)
        #expect(try await stack.call("GET", "/v1/sessions/\(b)?validate=never").status == 200)

        cluster.freeze()
        // One request, and another on another session a moment later: each answers by its own deadline (1 s
        // statement timeout + 500 ms margin), the second never waits for the first to give up.
        let early = Task { try await stack.call("GET", "/v1/sessions/\(a)?validate=never") }
        try await Task.sleep(for: .milliseconds(400))
        let late = try await stack.call("GET", "/v1/sessions/\(b)?validate=never")
        let earlier = try await early.value
        for (reply, what) in [(earlier, "first"), (late, "second")] {
            #expect(reply.status == 503 && reply.errorCode == "database_unavailable", "\(what): \(reply.text)")
            #expect(reply.header("Retry-After") != nil)
            #expect(reply.took < .milliseconds(3000), "\(what) took \(reply.took)")
        }
        cluster.thaw()
        let recovered = await waitUntil(timeout: .seconds(15)) {
            (try? await stack.call("GET", "/v1/sessions/\(a)?validate=never").status) == 200
        }
        #expect(recovered, "the same service works again, without a restart")
        let login = try await stack.login(owner: "owner-3", token: try stack.userToken(name: "Ada Byron").token)
        #expect(login.status == 201)
        await stack.stop()
    }
}
