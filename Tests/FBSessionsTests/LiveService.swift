import FBSessionsAPI
import FBSessionsCore
import FBSessionsStorage
import Foundation
import HTTPServer
import Postgres
import Support
import TestSupport

/// The whole service in-process on a real socket and a real database, with a demo app and key.
final class LiveService: Sendable {
    let server: Server
    let pool: PostgresPool
    let key: String
    let metrics: MetricsRegistry
    var port: Int { server.port }

    init(
        databaseURL: String, poolSize: Int = 4, maxWaiters: Int = 100, acquireTimeout: Duration = .seconds(5),
        extraRoutes: @Sendable (Database) -> [Route] = { _ in [] }
    ) async throws {
        pool = PostgresPool(
            configuration: .init(
                connectionString: databaseURL, size: poolSize, maxWaiters: maxWaiters, acquireTimeout: acquireTimeout,
                connectTimeout: .seconds(2)))
        let database = Database(pool: pool)
        let keyring = SecretsTranscript.notingKeyring(Keyring.generate()).ring
        let apps = PostgresAppStore(database: database, keyring: keyring)
        let keys = PostgresKeyStore(database: database)
        let app = try await apps.addApp(
            AppDraft(name: "live", facebookAppID: "4242", secret: "s3cret", redirectURIs: [], requiredPermissions: []))
        key = SecretsTranscript.noted("api key", try await keys.addKey(appID: app.id, scopes: [.sessions]).text)
        metrics = MetricsRegistry()
        let services = Services(
            apps: apps, keys: keys,
            readiness: PostgresReadiness(database: database, migrator: Migrator(migrations: try TestDatabase.migrations())),
            metrics: metrics, openAPIDocument: Array(try SpecConformanceTests.specText().utf8), sessions: .unused(),
            maxSlots: 8)
        let router = Router(
            routes: APIRoutes.all(services) + extraRoutes(database), keys: keys,
            observer: Observer(metrics: metrics, logger: SecretsTranscript.logger("http", level: .error)))
        var configuration = ServerConfiguration()
        configuration.port = 0
        server = try Server(configuration: configuration, handler: SecretsTranscript.recording(router))
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
        pool.shutdown()
    }
}
