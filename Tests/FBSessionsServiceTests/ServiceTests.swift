import FBSessionsAPI
import FBSessionsStorage
import Foundation
import HTTPServer
import LocalCluster
import Postgres
import Testing
import TestSupport

/// The service end to end: real sockets, a real database, and a database that goes away and comes back.
@Suite(.enabled(if: TestDatabase.isEnabled)) struct ServiceTests {
    @Test func servesHealthReadinessAndAuthenticatedRoutes() async throws {
        let url = try TestDatabase.create()
        defer { TestDatabase.drop(url) }
        let service = try await LiveService(databaseURL: url)
        defer { service.stop() }
        try await onThread {
            #expect(try service.request("/healthz", authorized: false).status == 200)
            #expect(try service.request("/readyz", authorized: false).status == 200)
            let app = try service.request("/v1/app")
            #expect(app.status == 200 && app.text.contains(#""facebook_app_id":"4242""#))
            #expect(!app.text.contains("s3cret"))
            let anonymous = try service.request("/v1/app", authorized: false)
            #expect(anonymous.status == 401 && anonymous.headers["x-request-id"] != nil)
            let spec = try service.request("/openapi.yaml", authorized: false)
            #expect(spec.text.hasPrefix("openapi: 3.1.0"))
            let metrics = try service.request("/metrics", authorized: false).text
            #expect(metrics.contains(#"fbs_http_requests_total{route="/v1/app",method="GET",status="200"} 1"#))
        }
    }

    @Test func readinessFailsUntilMigrationsAreCurrent() async throws {
        let url = try TestDatabase.createEmpty()
        defer { TestDatabase.drop(url) }
        let pool = PostgresPool(configuration: .init(connectionString: url, size: 1))
        defer { pool.shutdown() }
        let probe = PostgresReadiness(database: Database(pool: pool), migrator: Migrator(migrations: try TestDatabase.migrations()))
        let before = await probe.readiness()
        #expect(before.databaseReachable && !before.migrationsCurrent)
        _ = try await pool.withConnection { try Migrator(migrations: try TestDatabase.migrations()).migrate(on: $0) }
        #expect(await probe.readiness().isReady)
    }

    @Test func busyPoolQueuesThenAnswers503WithoutBlockingTheServer() async throws {
        let url = try TestDatabase.create()
        defer { TestDatabase.drop(url) }
        let service = try await LiveService(
            databaseURL: url, poolSize: 1, maxWaiters: 3, acquireTimeout: .milliseconds(400),
            extraRoutes: { database in
                [
                    Route("GET", "/v1/test/hold", operationID: "hold", scope: nil, handler: .waiting { _ in
                        _ = try await database.run { try $0.query("SELECT pg_sleep(1.5)") }
                        return .json(status: 200, body: Array("{}".utf8))
                    })
                ]
            })
        defer { service.stop() }
        try await onThread {
            // One request holds the only connection for 1.5 s; more requests queue (3 at most) or are refused.
            let holder = try RawConnection(port: service.port, timeout: 10)
            holder.send("GET /v1/test/hold HTTP/1.1\r\nHost: h\r\n\r\n")
            Thread.sleep(forTimeInterval: 0.2)
            let waiting = try (0..<8).map { _ in try RawConnection(port: service.port, timeout: 10) }
            for connection in waiting {
                connection.send("GET /v1/app HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer \(service.key)\r\n\r\n")
            }
            let started = Date()
            #expect(try service.request("/healthz", authorized: false).status == 200)
            #expect(Date().timeIntervalSince(started) < 1.0)  // the holder keeps the pool for 1.5 s
            let replies = try waiting.map { try $0.readReply() }
            #expect(replies.allSatisfy { $0.status == 503 && $0.headers["retry-after"] == "1" })
            #expect(replies.allSatisfy { $0.text.contains("database_unavailable") })
            let counted = try service.request("/metrics", authorized: false).text
            #expect(counted.contains("\nfbs_http_database_unavailable_total \(replies.count)\n"), "\(counted)")
            #expect(try holder.readReply().status == 200)
            // Once the pool is free, requests succeed again.
            #expect(try service.request("/v1/app").status == 200)
        }
    }

    @Test func survivesADatabaseRestart() async throws {
        _ = try TestDatabase.requireServerURL()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fbs-restart-\(UUID().uuidString)").path
        let cluster = try Cluster(directory: directory, port: Cluster.freePort(), options: .init(durable: false))
        defer {
            try? cluster.stop(mode: .immediate)
            try? cluster.remove()
        }
        try await onThread {
            _ = try cluster.initializeIfNeeded()
            try cluster.start()
            try cluster.waitUntilAccepting()
            try cluster.createDatabase("fbs")
        }
        let url = cluster.connectionURL(database: "fbs")
        let connection = try PostgresConnection(connectionString: url)
        _ = try Migrator(migrations: try TestDatabase.migrations()).migrate(on: connection)
        connection.close()
        let service = try await LiveService(databaseURL: url, poolSize: 2)
        defer { service.stop() }
        try await onThread {
            #expect(try service.request("/v1/app").status == 200)
            try cluster.stop(mode: .fast)
            for _ in 0..<3 {
                let down = try service.request("/v1/app")
                #expect(down.status == 503 && down.headers["retry-after"] == "1")
                #expect(down.text.contains("database_unavailable"))
            }
            #expect(try service.request("/healthz", authorized: false).status == 200)
            #expect(try service.request("/readyz", authorized: false).status == 503)
            // The three, and not /readyz's 503 `not_ready`, are counted for the alert FBSDatabaseUnavailable.
            let counted = try service.request("/metrics", authorized: false).text
            #expect(counted.contains("\nfbs_http_database_unavailable_total 3\n"), "\(counted)")
            try cluster.start()
            try cluster.waitUntilAccepting()
            var recovered = false
            for _ in 0..<20 where !recovered {
                recovered = try service.request("/v1/app").status == 200
                if !recovered { Thread.sleep(forTimeInterval: 0.25) }
            }
            #expect(recovered)
            #expect(try service.request("/readyz", authorized: false).status == 200)
        }
    }
}
