import FBSessionsAPI
import FBSessionsCore
import FBSessionsGraph
import FBSessionsStorage
import Foundation
import HTTPClient
import HTTPServer
import Postgres
import Support

/// Starts the HTTP service on a runtime and runs it until SIGTERM or SIGINT, then stops it in order: stop
/// accepting, drain in-flight requests, close the pool.
enum ServiceHost {
    static func serve(_ runtime: Runtime, whenListening: (Server) -> Void = { _ in }) async throws {
        let service = try start(runtime)
        ProcessMemory.startReclaiming()  // Once per process, so here rather than in `start`.
        whenListening(service.server)
        let signal = await Signals.waitForTermination()
        await service.stop(reason: signal)
        StandardErrorLogHandler.flush()
    }

    /// Wires every part of the service on `runtime` as `serve` runs it, starts the HTTP server, the event listener
    /// (on the direct URL), the webhook dispatcher and the sweep, and returns them running (tests drive this too).
    ///
    /// - Parameter runtime: The settings, pool and migrator.
    /// - Returns: The running service; ``RunningService/stop(reason:)`` ends it.
    /// - Throws: ``CommandFailure`` for an unusable setting or a missing file.
    static func start(_ runtime: Runtime) throws -> RunningService {
        let settings = runtime.settings
        let keyring = try runtime.keyring()
        let metrics = MetricsRegistry()
        let pool = runtime.database.pool
        metrics.gauge("fbs_db_pool_connections", help: "Database connections by state.") {
            let statistics = pool.statistics
            return [([("state", "in_use")], Double(statistics.inUse)), ([("state", "open")], Double(statistics.open)),
                    ([("state", "size")], Double(statistics.size))]
        }
        metrics.gauge("fbs_db_pool_waiting", help: "Requests waiting for a database connection.") {
            [([], Double(pool.statistics.waiting))]
        }
        let apps = PostgresAppStore(database: runtime.database, keyring: keyring)
        let cache = exactCache(settings, metrics: metrics)
        let store = PostgresSessionStore(database: runtime.database, keyring: keyring, cache: cache)
        let graph: GraphClient
        do {
            graph = try GraphClient(
                configuration: .init(settings: settings), logger: Logger(label: "graph", level: settings.logLevel),
                metrics: metrics)
        } catch {
            throw CommandFailure("FBS_GRAPH_URL: \(error)")
        }
        let limitedClient = try limitedLoginClient(settings, metrics: metrics)
        let sessions = SessionService(
            store: store, graph: graph, apps: apps,
            policy: policy(settings), limitedLogin: limitedClient)
        let limitedLogin = LimitedLogin(
            sessions: sessions, nonces: PostgresLoginNonceStore(database: runtime.database),
            keys: SigningKeyCache(source: limitedClient))
        let eventWaiters = EventWaiters()
        metrics.gauge("fbs_event_waiters", help: "Long-poll requests waiting for events.") {
            [([], Double(eventWaiters.count))]
        }
        let webhookClient = try Client(configuration: .init(timeout: .seconds(10), maxResponseBytes: 64 * 1024))
        let pictureFetcher = try PictureFetcher(allowsHTTP: settings.pictureAllowHTTP)
        let pictures = PictureService(
            sessions: sessions, store: PostgresPictureStore(database: runtime.database, cache: cache), fetcher: pictureFetcher,
            urlPolicy: PictureURLPolicy(hostSuffixes: settings.pictureHosts, allowsHTTP: settings.pictureAllowHTTP),
            policy: .init(
                limits: PictureFetchLimits(maxBytes: settings.pictureMaxBytes, timeout: settings.graphTimeout),
                graphTimeout: settings.graphTimeout),
            metrics: metrics)
        let webhooks = WebhookDispatcher(
            database: runtime.database, keyring: keyring, transport: ClientWebhookTransport(client: webhookClient),
            logger: Logger(label: "webhooks", level: settings.logLevel))
        // The listener needs a server session of its own for LISTEN: the direct URL, past any pooler.
        let notifications = EventNotifications(
            connectionString: runtime.directDatabaseURL, waiters: eventWaiters, dispatcher: webhooks, cache: cache,
            logger: Logger(label: "events", level: settings.logLevel))
        let services = Services(
            apps: apps,
            keys: CachedKeyStore(PostgresKeyStore(database: runtime.database, cache: cache), ttl: settings.keyCacheTTL),
            readiness: PostgresReadiness(database: runtime.database, migrator: runtime.migrator),
            metrics: metrics,
            openAPIDocument: OpenAPIDocument.serving(try OpenAPIFile.load(), publicURL: settings.publicURL),
            sessions: sessions, maxSlots: settings.maxSlots,
            events: PostgresEventStore(database: runtime.database), eventWaiters: eventWaiters,
            loginFlow: LoginFlow(
                sessions: sessions, states: PostgresLoginStateStore(database: runtime.database),
                configuration: .init(dialogURL: settings.dialogURL, graphVersion: settings.graphVersion)),
            facebookCallbacks: FacebookCallbacks(
                apps: apps, users: store, publicURL: settings.publicURL), pictures: pictures,
            docsPage: try DocsPageFile.load(logger: runtime.logger), limitedLogin: limitedLogin)
        var httpLogger = Logger(label: "http", level: settings.logLevel)
        httpLogger.metadata = [:]
        let router = Router(
            routes: APIRoutes.all(services), keys: services.keys,
            observer: Observer(metrics: metrics, logger: httpLogger))

        var configuration = ServerConfiguration()
        configuration.host = settings.listenHost
        configuration.port = settings.listenPort
        configuration.maxBodyBytes = settings.maxBodyBytes
        configuration.connectionLimit = settings.maxConnections
        configuration.connectionTimeout = settings.connectionTimeout
        let server: Server
        do {
            server = try Server(configuration: configuration, handler: router)
        } catch let error as ServerError {
            throw CommandFailure(error.description)
        }
        metrics.gauge("fbs_http_requests_waiting", help: "Requests suspended while their handler waits.") {
            [([], Double(server.waitingRequests))]
        }
        runtime.logger.info("listening", ["address": .string("\(settings.listenHost):\(server.port)")])
        notifications.start()
        webhooks.start()
        let sweeping = SweepCommand.loop(
            sessions: sessions, store: store, settings: settings, logger: runtime.logger)
        return RunningService(
            runtime: runtime, server: server, eventWaiters: eventWaiters, notifications: notifications,
            webhooks: webhooks, sweeping: sweeping,
            closers: [graph.shutdown, limitedClient.shutdown, webhookClient.shutdown, pictureFetcher.shutdown])
    }
}

extension ServiceHost {
    /// The exact cache `FBS_CACHE_BYTES` asks for (nil at 0), counted in `/metrics`.
    static func exactCache(_ settings: Settings, metrics: MetricsRegistry) -> ExactCache? {
        guard settings.cacheBytes > 0 else { return nil }
        let cache = ExactCache(capacity: settings.cacheBytes)
        metrics.gauge("fbs_cache_lookups", help: "Exact cache lookups by outcome, and reads it let through.") {
            let statistics = cache.currentStatistics
            return [([("outcome", "hit")], Double(statistics.hits)), ([("outcome", "miss")], Double(statistics.misses)),
                    ([("outcome", "bypassed")], Double(statistics.bypassed)),
                    ([("outcome", "refused_fill")], Double(statistics.refusedFills))]
        }
        metrics.gauge("fbs_cache_size", help: "Exact cache entries and their estimated bytes.") {
            let statistics = cache.currentStatistics
            return [([("unit", "entries")], Double(statistics.entries)), ([("unit", "bytes")], Double(statistics.bytes))]
        }
        metrics.gauge("fbs_cache_fences", help: "Fences sent and announcements handled by the exact cache.") {
            let statistics = cache.currentStatistics
            return [([("kind", "fences_sent")], Double(statistics.fencesSent)),
                    ([("kind", "invalidations")], Double(statistics.invalidations))]
        }
        return cache
    }

    /// The Limited Login client the settings describe (`FBS_LIMITED_JWKS_URL`, `FBS_LIMITED_UNINSTALL_URL`).
    static func limitedLoginClient(_ settings: Settings, metrics: MetricsRegistry? = nil) throws -> LimitedLoginClient {
        do {
            return try LimitedLoginClient(
                configuration: .init(settings: settings), logger: Logger(label: "limited", level: settings.logLevel),
                metrics: metrics)
        } catch let error as GraphClient.ConfigurationError {
            throw CommandFailure(error.description)
        }
    }

    /// The session policy the settings describe.
    static func policy(_ settings: Settings) -> SessionService.Policy {
        .init(
            validateTTL: Double(settings.validateTTL), refreshAfter: Double(settings.refreshAfter),
            maxSlots: settings.maxSlots, graphVersion: settings.graphVersion, graphTimeout: settings.graphTimeout)
    }
}

/// `openapi.yaml`, found like the migrations: `FBS_OPENAPI_FILE`, `./openapi.yaml`, the installed copy, or above
/// the executable in a source checkout.
enum OpenAPIFile {
    static func load(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> [UInt8] {
        for url in ResourceLocator.candidates("openapi.yaml", setting: "FBS_OPENAPI_FILE", environment: environment) {
            if let data = FileManager.default.contents(atPath: url.path) { return Array(data) }
        }
        throw CommandFailure("openapi.yaml not found; set FBS_OPENAPI_FILE")
    }
}

/// `docs.html`, the try-it page served at `/docs`, found like `openapi.yaml` (and installed beside it):
/// `FBS_DOCS_FILE`, `./docs.html`, the installed `share/fbsessiond/docs.html`, or above the executable.
enum DocsPageFile {
    /// The page; a placeholder (and a warning) when it is not installed, since the service works without it.
    /// - Throws: ``CommandFailure`` when `FBS_DOCS_FILE` names a file that cannot be read.
    static func load(
        logger: Logger, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> DocsPage {
        for url in ResourceLocator.candidates("docs.html", setting: "FBS_DOCS_FILE", environment: environment) {
            if let data = FileManager.default.contents(atPath: url.path) { return DocsPage(html: Array(data)) }
        }
        if let configured = environment["FBS_DOCS_FILE"], !configured.isEmpty {
            throw CommandFailure("FBS_DOCS_FILE: cannot read \(configured)")
        }
        logger.warning("docs.html not found; /docs serves a placeholder", ["setting": .string("FBS_DOCS_FILE")])
        return .placeholder
    }
}
