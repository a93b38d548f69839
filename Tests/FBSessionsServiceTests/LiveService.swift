import FBSessionsAPI
import FBSessionsCore
import FBSessionsService
import FBSessionsStorage
import Foundation
import HTTPServer
import Postgres
import Support
import TestSupport

/// The whole service in-process (``ServiceAssembly``) on a real socket and a real database, with a demo app and key.
final class LiveService: Sendable {
    let service: ServiceAssembly
    let server: Server
    let pool: PostgresPool
    let key: String
    var metrics: MetricsRegistry { service.metrics }
    var port: Int { server.port }

    /// - Parameter extraRoutes: Probes served besides the contract's routes, given the database.
    init(
        databaseURL: String, poolSize: Int = 4, maxWaiters: Int = 100, acquireTimeout: Duration = .seconds(5),
        extraRoutes: @Sendable (Database) -> [Route] = { _ in [] }
    ) async throws {
        pool = PostgresPool(
            configuration: .init(
                connectionString: databaseURL, size: poolSize, maxWaiters: maxWaiters, acquireTimeout: acquireTimeout,
                connectTimeout: .seconds(2)))
        let database = try ServiceDatabase.test(
            pool: pool, url: databaseURL, keyring: SecretsTranscript.notingKeyring(Keyring.generate()).ring)
        var parts = try ServiceParts.test()
        parts.cache = .given(nil)
        parts.openAPIDocument = Array(try OpenAPISpec.specText().utf8)
        parts.extraRoutes = extraRoutes(database.database)
        service = try ServiceAssembly(parts, database: database)
        let app = try await service.apps.addApp(
            AppDraft(name: "live", facebookAppID: "4242", secret: "s3cret", redirectURIs: [], requiredPermissions: []))
        key = SecretsTranscript.noted("api key", try await service.keys.addKey(appID: app.id, scopes: [.sessions]).text)
        server = try service.server(SecretsTranscript.recording)
    }

    /// One request over a new connection (blocking; call inside `onThread`).
    func request(_ target: String, authorized: Bool = true) throws -> RawConnection.Reply {
        let connection = try RawConnection(port: port, timeout: 15)
        let authorization = authorized ? "Authorization: Bearer \(key)\r\n" : ""
        connection.send("GET \(target) HTTP/1.1\r\nHost: localhost\r\n\(authorization)\r\n")
        return try connection.readReply()
    }

    func stop() {
        server.shutdown(gracePeriod: 1)
        service.shutdown()
        pool.shutdown()
    }
}
