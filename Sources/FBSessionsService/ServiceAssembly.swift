import FBSessionsAPI
import FBSessionsCore
import FBSessionsFastPath
import FBSessionsGraph
import FBSessionsStorage
import GraphVersions
import HTTPClient
import HTTPServer
import Postgres
import Support
import Tracing

/// The whole service wired on its database: metrics, the exact cache, the PostgreSQL stores, the Graph, Limited
/// Login, picture and webhook clients, the domain services, the router, the webhook dispatcher and the event
/// listener. `fbsessiond serve` and every test harness build it here, so that what is tested is what runs.
///
/// Building it starts nothing: the caller serves the router (``server(_:)``), starts ``notifications`` and
/// ``webhooks`` if it wants them, and calls ``shutdown()`` once they have stopped.
///
/// Ownership: owns the clients (``shutdown()`` closes them); the database's pool is the caller's.
public final class ServiceAssembly: Sendable {
    /// What it was built from.
    public let parts: ServiceParts
    /// The database and its key ring.
    public let database: ServiceDatabase
    /// Every count `/metrics` serves.
    public let metrics: MetricsRegistry
    /// The exact cache; nil when there is none.
    public let cache: ExactCache?
    /// Apps and their secrets.
    public let apps: PostgresAppStore
    /// API keys, behind the key cache of `FBS_KEY_CACHE_TTL`.
    public let keys: any KeyStore
    /// Sessions: the one store, with the one set of read batchers.
    public let store: PostgresSessionStore
    /// The change feed.
    public let events: PostgresEventStore
    /// The Graph API.
    public let graph: GraphClient
    /// Each app's Graph version and what Facebook answers with (`GET /v1/app`, metrics, daily warnings).
    public let graphVersions: GraphVersionWatch
    /// Limited Login's key set and uninstall endpoint.
    public let limitedLoginClient: LimitedLoginClient
    /// Fetches pictures from Facebook's CDN.
    public let pictureFetcher: PictureFetcher
    /// Delivers webhooks (not started).
    public let webhooks: WebhookDispatcher
    /// The `LISTEN` connection that wakes long polls and the dispatcher and keeps a `.sized` cache current (not
    /// started).
    public let notifications: EventNotifications
    /// The domain services and the router.
    public let routes: ServiceRoutes
    /// What the HTTP server serves: the fast path, when there is an exact cache, in front of the router.
    public let handler: ServiceHandler
    private let webhookClient: Client
    /// Makes and exports the spans; nil when tracing is off (`OTEL_EXPORTER_OTLP_…` unset).
    public let tracer: Tracer?
    /// The client the tracer posts spans with; nil when tracing is off or a test gave the exporter.
    private let otlpClient: Client?
    /// The stores' database: the caller's, with the tracer.
    private let storage: Database

    /// Wires the service.
    ///
    /// - Parameters:
    ///   - parts: Settings, documents, loggers and the parts tests swap.
    ///   - database: The database, its key ring and migrations, and the listener's URL.
    /// - Throws: ``ServiceSettingError`` for a Graph or Limited Login URL that cannot be used; what
    ///   `HTTPClient` throws when libcurl cannot start.
    public init(_ parts: ServiceParts, database: ServiceDatabase) throws {
        let settings = parts.settings
        self.parts = parts
        self.database = database
        let metrics = MetricsRegistry()
        self.metrics = metrics
        let pool = database.database.pool
        // Registered whether tracing is on or not: 0 while off.
        let counters = TracingCounters(registeringIn: metrics)
        if let made = try OTLPExport.tracer(parts.settings.tracing, exporter: parts.spanExporter, counters: counters) {
            tracer = made.0
            otlpClient = made.1
        } else {
            tracer = nil
            otlpClient = nil
        }
        // The stores' database, with the tracer that makes their spans.
        var storage = database.database
        storage.tracer = tracer
        self.storage = storage
        metrics.gauge("fbs_db_pool_connections", help: "Database connections by state.") {
            let statistics = pool.statistics
            return [([("state", "in_use")], Double(statistics.inUse)), ([("state", "open")], Double(statistics.open)),
                    ([("state", "size")], Double(statistics.size))]
        }
        metrics.gauge("fbs_db_pool_waiting", help: "Requests waiting for a database connection.") {
            [([], Double(pool.statistics.waiting))]
        }
        apps = PostgresAppStore(database: storage, keyring: database.keyring)
        let cache: ExactCache?
        switch parts.cache {
        case .sized: cache = settings.cacheBytes > 0 ? ExactCache(capacity: settings.cacheBytes) : nil
        case .given(let given): cache = given
        }
        if let cache { Self.count(cache, in: metrics) }
        self.cache = cache
        store = PostgresSessionStore(
            database: storage, keyring: database.keyring, cache: cache,
            expiryWarning: Double(settings.expiryWarning))
        let graphVersions = GraphVersionWatch(
            apps: apps, defaultVersion: GraphVersion(settings.graphVersion) ?? GraphVersionTable.defaultVersion,
            metrics: metrics, logger: parts.logger("graph"))
        self.graphVersions = graphVersions
        do {
            graph = try GraphClient(
                configuration: parts.graph, logger: parts.logger("graph"), metrics: metrics,
                servedVersions: graphVersions.observe, tracer: tracer)
        } catch {
            throw ServiceSettingError("FBS_GRAPH_URL: \(error)")
        }
        do {
            limitedLoginClient = try LimitedLoginClient(
                configuration: parts.limitedLoginClient, logger: parts.logger("limited"), metrics: metrics,
                tracer: tracer)
        } catch let error as GraphClient.ConfigurationError {
            throw ServiceSettingError(error.description)
        }
        webhookClient = try Client(configuration: .init(timeout: .seconds(10), maxResponseBytes: 64 * 1024))
        pictureFetcher = try PictureFetcher(allowsHTTP: settings.pictureAllowHTTP, tracer: tracer)
        events = PostgresEventStore(database: storage)
        let keys = CachedKeyStore(PostgresKeyStore(database: storage, cache: cache), ttl: settings.keyCacheTTL)
        var ports = ServicePorts(
            apps: apps, keys: keys,
            readiness: PostgresReadiness(database: storage, migrator: database.migrator),
            sessionStore: store, graph: graph)
        ports.limitedLogin = limitedLoginClient
        ports.loginNonces = PostgresLoginNonceStore(database: storage)
        ports.events = events
        ports.loginStates = PostgresLoginStateStore(database: storage)
        ports.facebookUsers = store
        ports.pictures = PostgresPictureStore(database: storage, cache: cache)
        ports.pictureFetcher = pictureFetcher
        ports.graphVersions = graphVersions
        ports.audit = PostgresAuditLog(database: storage)
        self.keys = keys
        let routes = ServiceRoutes(parts, ports: ports, metrics: metrics, tracer: tracer)
        self.routes = routes
        handler = ServiceHandler(
            router: routes.router,
            fastPath: cache.map {
                FastPath(
                    cache: $0, keys: keys, sessions: routes.sessions, pictures: routes.pictures, router: routes.router,
                    limiter: routes.limiter)
            })
        // A key's rate limit can change (`key update --rate`): every announcement of a key, wherever it was
        // committed, makes this instance's key cache forget the key before the fence that follows passes, as it
        // drops the key's liveness (docs/api-contract.md, "Rate limits").
        cache?.observeKeyAnnouncements { keyID in
            if let keyID { keys.forget(keyID: keyID) } else { keys.forgetAll() }
        }
        webhooks = WebhookDispatcher(
            database: storage, keyring: database.keyring,
            transport: ClientWebhookTransport(client: webhookClient), logger: parts.logger("webhooks"),
            metrics: metrics, tracer: tracer)
        // A given cache is kept current by its owner's listener: attaching it here too would take its fences away.
        let listened: ExactCache? = if case .sized = parts.cache { cache } else { nil }
        notifications = EventNotifications(
            connectionString: database.listenerURL, waiters: routes.services.eventWaiters, dispatcher: webhooks,
            cache: listened, logger: parts.logger("events"))
        if listened != nil {
            let notifications = notifications
            metrics.gauge(
                "fbs_cache_fence_method",
                help: "How the exact cache's fences go on the listener's connection: 1 for the method in use, 0 for "
                    + "the other (sync from PostgreSQL 15 on, notify before); both 0 while it is not listening."
            ) {
                let method = notifications.fenceMethod
                return [([("method", "sync")], method == .sync ? 1 : 0),
                        ([("method", "notify")], method == .notify ? 1 : 0)]
            }
        }
    }

    /// Sessions.
    public var sessions: SessionService { routes.sessions }
    /// What the routes use.
    public var services: Services { routes.services }
    /// Every route, with authentication, request logs and metrics.
    public var router: Router { routes.router }
    /// The long-poll readers.
    public var eventWaiters: EventWaiters { routes.services.eventWaiters }

    /// A server for ``handler`` on the settings' address (`FBS_LISTEN`) and limits, counted in `/metrics`.
    ///
    /// - Parameter handler: What serves the requests, given ``handler`` (a test records the answers).
    /// - Throws: `ServerError` when the address cannot be bound.
    public func server<Handler: RequestHandler>(_ handler: (ServiceHandler) -> Handler) throws -> Server {
        let settings = parts.settings
        var configuration = ServerConfiguration()
        configuration.host = settings.listenHost
        configuration.port = settings.listenPort
        configuration.maxBodyBytes = settings.maxBodyBytes
        configuration.connectionLimit = settings.maxConnections
        configuration.connectionTimeout = settings.connectionTimeout
        let logger = parts.logger("http")
        configuration.reportProblem = { problem in logger.warning("http server problem", ["problem": .string(problem)]) }
        let companion: (@Sendable (Int) -> any EventLoopCompanion)? = cache.map { cache in
            let url = database.listenerURL
            return { _ in LoopFenceCompanion(cache: cache, listenerURL: url) }
        }
        let server = try Server(configuration: configuration, handler: handler(self.handler), companion: companion)
        // Weakly: the registry is the router's too (`/metrics`), so a strong reference would make a cycle of the server,
        // its handler and the registry that outlives the service.
        metrics.gauge("fbs_http_requests_waiting", help: "Requests waiting while their handler works or for a fence.") {
            [weak server] in [([], Double(server?.waitingRequests ?? 0))]
        }
        if let cache {
            // Each loop's fence connection becomes current within milliseconds of its start when the database is
            // up; until then its requests take the listener's fence, so this wait is only for steadier first answers.
            cache.waitForLoopFences(server.loopCount, upTo: .seconds(1))
        }
        return server
    }

    /// Another picture service over the same parts and database, with a single flight and memory of its own, as a
    /// second process would have; `sessions` replaces the session service it checks sessions with.
    public func pictureService(sessions: SessionService? = nil) -> PictureService {
        ServiceRoutes.pictures(
            parts, sessions: sessions ?? self.sessions, store: PostgresPictureStore(database: storage, cache: cache),
            fetcher: pictureFetcher, metrics: nil)
    }

    /// Closes the clients: call it once the server, the dispatcher and the listener have stopped.
    public func shutdown() {
        // Spans still queued get a bounded last export: the shutdown waits at most this long for the collector.
        tracer?.shutdown(timeout: min(parts.settings.tracing?.batchExportTimeout ?? 0, 5))
        otlpClient?.shutdown()
        graph.shutdown()
        limitedLoginClient.shutdown()
        webhookClient.shutdown()
        pictureFetcher.shutdown()
    }

    /// Counts the cache's lookups, size and fences in `/metrics`.
    private static func count(_ cache: ExactCache, in metrics: MetricsRegistry) {
        metrics.gauge("fbs_cache_lookups", help: "Exact cache lookups by outcome, and reads it let through.") {
            let statistics = cache.currentStatistics
            return [([("outcome", "hit")], Double(statistics.hits)), ([("outcome", "miss")], Double(statistics.misses)),
                    ([("outcome", "bypassed")], Double(statistics.bypassed)),
                    ([("outcome", "refused_fill")], Double(statistics.refusedFills)),
                    ([("outcome", "not_admitted")], Double(statistics.notAdmitted))]
        }
        metrics.gauge("fbs_cache_size", help: "Exact cache entries and their estimated bytes.") {
            let statistics = cache.currentStatistics
            return [([("unit", "entries")], Double(statistics.entries)), ([("unit", "bytes")], Double(statistics.bytes))]
        }
        metrics.gauge("fbs_cache_fences", help: "Fences sent and announcements handled by the exact cache.") {
            let statistics = cache.currentStatistics
            return [([("kind", "fences_sent")], Double(statistics.fencesSent)),
                    ([("kind", "loop_fences_sent")], Double(statistics.loopFencesSent)),
                    ([("kind", "loop_connections_lost")], Double(statistics.loopConnectionsLost)),
                    ([("kind", "invalidations")], Double(statistics.invalidations))]
        }
    }
}

/// A setting the service cannot be built with (an unusable Graph or Limited Login URL), named in the message.
public struct ServiceSettingError: Error, CustomStringConvertible, Sendable {
    /// What is wrong, naming the variable.
    public let description: String

    /// An error with its message.
    public init(_ description: String) { self.description = description }
}
