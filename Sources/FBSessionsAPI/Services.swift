import FBSessionsCore
import Support

/// What the routes need from the rest of the service.
public struct Services: Sendable {
    /// Apps.
    public let apps: any AppStore
    /// API keys.
    public let keys: any KeyStore
    /// Readiness.
    public let readiness: any ReadinessProbe
    /// Metrics.
    public let metrics: MetricsRegistry
    /// The bytes of `openapi.yaml` as served (``OpenAPIDocument/serving(_:publicURL:)``).
    public let openAPIDocument: [UInt8]
    /// Sessions.
    public let sessions: SessionService
    /// Accounts per owner.
    public let maxSlots: Int
    /// The change feed; `nil` (route tests without a database) answers 503 `database_unavailable`.
    public let events: (any EventStore)?
    /// Long-poll readers of the feed, woken by the database listener.
    public let eventWaiters: EventWaiters
    /// Login URLs and the code flow; `nil` (route tests without a database) answers 503 `database_unavailable`.
    public let loginFlow: LoginFlow?
    /// Facebook's deauthorize and data-deletion callbacks; `nil` answers 503 `database_unavailable`.
    public let facebookCallbacks: FacebookCallbacks?
    /// Profile pictures; `nil` (tests that do not need them) answers 503 `picture_unavailable`.
    public let pictures: PictureService?
    /// Limited Login's nonces and logins; `nil` (route tests without a database) answers 503
    /// `database_unavailable`.
    public let limitedLogin: LimitedLogin?
    /// The try-it page at `GET /docs`.
    public let docsPage: DocsPage
    /// Each app's Graph version, for `GET /v1/app`; nil shows the app without it (route tests).
    public let graphVersions: GraphVersionWatch?
    /// The audit log; `nil` (route tests without a database) answers 503 `database_unavailable`.
    public let audit: (any AuditLog)?

    /// Creates the bundle.
    public init(
        apps: any AppStore, keys: any KeyStore, readiness: any ReadinessProbe, metrics: MetricsRegistry,
        openAPIDocument: [UInt8], sessions: SessionService, maxSlots: Int, events: (any EventStore)? = nil,
        eventWaiters: EventWaiters = EventWaiters(), loginFlow: LoginFlow? = nil,
        facebookCallbacks: FacebookCallbacks? = nil, pictures: PictureService? = nil, docsPage: DocsPage = .placeholder,
        limitedLogin: LimitedLogin? = nil, graphVersions: GraphVersionWatch? = nil, audit: (any AuditLog)? = nil
    ) {
        self.apps = apps
        self.keys = keys
        self.readiness = readiness
        self.metrics = metrics
        self.openAPIDocument = openAPIDocument
        self.sessions = sessions
        self.maxSlots = maxSlots
        self.events = events
        self.eventWaiters = eventWaiters
        self.loginFlow = loginFlow
        self.facebookCallbacks = facebookCallbacks
        self.pictures = pictures
        self.docsPage = docsPage
        self.limitedLogin = limitedLogin
        self.graphVersions = graphVersions
        self.audit = audit
    }
}

/// Every route of the service, one list: the router serves it, and the spec test compares it with `openapi.yaml`.
public enum APIRoutes {
    /// The routes.
    public static func all(_ services: Services) -> [Route] {
        HealthRoutes.routes(services) + DocsRoutes.routes(services) + AppRoutes.routes(services) + SessionRoutes.routes(services)
            + PictureRoutes.routes(services)
            + OwnerRoutes.routes(services)
            + EventRoutes.routes(events: services.events, waiters: services.eventWaiters)
            + LoginURLRoutes.routes(services) + FacebookCallbackRoutes.routes(services)
            + LoginNonceRoutes.routes(services)
            + AuditRoutes.routes(audit: services.audit)
    }
}
