import FBSessionsAPI
import FBSessionsCore
import GraphVersions
import RateLimiting
import Support
import Tracing

/// The stores and outside services the routes reach, as ports: PostgreSQL, Graph and Limited Login when
/// ``ServiceAssembly`` wires them, in-memory stand-ins in route tests.
public struct ServicePorts: Sendable {
    /// Apps and their secrets.
    public var apps: any AppStore
    /// API keys.
    public var keys: any KeyStore
    /// What `/readyz` reports.
    public var readiness: any ReadinessProbe
    /// Sessions and their events.
    public var sessionStore: any SessionStore
    /// The Graph API.
    public var graph: any GraphAPI
    /// Limited Login's key set and uninstall endpoint; with ``loginNonces``, enables Limited Login.
    public var limitedLogin: (any LimitedLoginAPI)?
    /// Limited Login's nonces.
    public var loginNonces: (any LoginNonceStore)?
    /// The change feed.
    public var events: (any EventStore)?
    /// The code flow's states; enables login URLs and the code flow.
    public var loginStates: (any LoginStateStore)?
    /// The Facebook users Facebook's callbacks close sessions of; enables the callbacks.
    public var facebookUsers: (any FacebookUserStore)?
    /// Stored pictures; with ``pictureFetcher``, enables pictures.
    public var pictures: (any PictureStore)?
    /// Fetches pictures from Facebook's CDN.
    public var pictureFetcher: (any PictureFetching)?
    /// Each app's Graph version and what Facebook answered with; nil makes one over ``apps`` that no Graph client
    /// tells of its answers (route tests).
    public var graphVersions: GraphVersionWatch?
    /// The audit log (`GET /v1/audit`).
    public var audit: (any AuditLog)?

    /// The ports every route needs; the others are nil, and their routes answer 503 (see ``Services``).
    public init(
        apps: any AppStore, keys: any KeyStore, readiness: any ReadinessProbe, sessionStore: any SessionStore,
        graph: any GraphAPI
    ) {
        self.apps = apps
        self.keys = keys
        self.readiness = readiness
        self.sessionStore = sessionStore
        self.graph = graph
    }
}

/// The domain services and the router over a set of ports: the half of ``ServiceAssembly`` that does not care
/// where the ports lead, and all of it that a route test on in-memory ports needs.
public struct ServiceRoutes: Sendable {
    /// Sessions.
    public let sessions: SessionService
    /// Limited Login's signing keys; nil without Limited Login's ports.
    public let signingKeys: SigningKeyCache?
    /// Limited Login; nil without its ports.
    public let limitedLogin: LimitedLogin?
    /// Pictures; nil without their ports.
    public let pictures: PictureService?
    /// What the routes use.
    public let services: Services
    /// Every route, with authentication, request logs and metrics.
    public let router: Router
    /// The API keys' rate limits: the router's ``RateLimitCheck`` and the fast path share this one.
    public let limiter: RateLimiter

    /// Wires the services and the router over `ports` as `parts` say.
    ///
    /// - Parameters:
    ///   - parts: Settings, documents, loggers and the parts tests tune.
    ///   - ports: The stores and outside services.
    ///   - metrics: Where the parts count (`/metrics` serves it).
    ///   - tracer: Makes the requests' server spans; nil when tracing is off.
    public init(
        _ parts: ServiceParts, ports: ServicePorts, metrics: MetricsRegistry = MetricsRegistry(), tracer: Tracer? = nil
    ) {
        let settings = parts.settings
        let sessions = SessionService(
            store: ports.sessionStore, graph: ports.graph, apps: ports.apps, policy: .init(settings: settings),
            limitedLogin: ports.limitedLogin)
        if let client = ports.limitedLogin, let nonces = ports.loginNonces {
            let keys = SigningKeyCache(source: client, policy: parts.signingKeys, clock: parts.signingKeyClock)
            signingKeys = keys
            limitedLogin = LimitedLogin(sessions: sessions, nonces: nonces, keys: keys, configuration: parts.limitedLogin)
        } else {
            signingKeys = nil
            limitedLogin = nil
        }
        let eventWaiters = parts.maxEventWaiters.map { EventWaiters(maxWaiters: $0) } ?? EventWaiters()
        metrics.gauge("fbs_event_waiters", help: "Long-poll requests waiting for events.") {
            [([], Double(eventWaiters.count))]
        }
        if let store = ports.pictures, let fetcher = ports.pictureFetcher {
            pictures = Self.pictures(parts, sessions: sessions, store: store, fetcher: fetcher, metrics: metrics)
        } else {
            pictures = nil
        }
        self.sessions = sessions
        services = Services(
            apps: ports.apps, keys: ports.keys, readiness: ports.readiness, metrics: metrics,
            openAPIDocument: parts.openAPIDocument, sessions: sessions, maxSlots: settings.maxSlots,
            events: ports.events, eventWaiters: eventWaiters,
            loginFlow: ports.loginStates.map {
                LoginFlow(
                    sessions: sessions, states: $0,
                    configuration: .init(dialogURL: settings.dialogURL, graphVersion: settings.graphVersion))
            },
            facebookCallbacks: ports.facebookUsers.map {
                FacebookCallbacks(apps: ports.apps, users: $0, publicURL: settings.publicURL)
            },
            pictures: pictures, docsPage: parts.docsPage, limitedLogin: limitedLogin,
            graphVersions: ports.graphVersions
                ?? GraphVersionWatch(
                    apps: ports.apps,
                    defaultVersion: GraphVersion(settings.graphVersion) ?? GraphVersionTable.defaultVersion,
                    metrics: metrics, logger: parts.logger("graph")),
            audit: ports.audit)
        var httpLogger = parts.logger("http")
        httpLogger.metadata = [:]
        let limiter = RateLimiter(clock: parts.rateLimitClock)
        self.limiter = limiter
        router = Router(
            routes: APIRoutes.all(services) + parts.extraRoutes, keys: ports.keys,
            observer: Observer(metrics: metrics, logger: httpLogger), middleware: [RateLimitCheck(limiter)],
            tracer: tracer)
    }

    /// The picture service `parts` describe over a store and a fetcher, with a single flight (and memory) of its
    /// own.
    static func pictures(
        _ parts: ServiceParts, sessions: SessionService, store: any PictureStore, fetcher: any PictureFetching,
        metrics: MetricsRegistry?
    ) -> PictureService {
        PictureService(
            sessions: sessions, store: store, fetcher: fetcher,
            urlPolicy: PictureURLPolicy(
                hostSuffixes: parts.settings.pictureHosts, allowsHTTP: parts.settings.pictureAllowHTTP),
            policy: parts.pictures, memory: parts.keepsPicturesInMemory ? PictureMemoryCache() : nil, metrics: metrics)
    }
}
