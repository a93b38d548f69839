import FBSessionsAPI
import FBSessionsCore
import FBSessionsGraph
import FBSessionsStorage
import Foundation
import RateLimiting
import Support
import Tracing

/// What the service is built from besides its database: the settings, the documents it serves, where its logs go,
/// and the few parts a test swaps. Each part defaults to what the settings say, so `fbsessiond serve` sets none of
/// them; a harness sets only what it tests.
public struct ServiceParts: Sendable {
    /// Where the exact cache comes from.
    public enum Cache: Sendable {
        /// One of `FBS_CACHE_BYTES` (none at 0), counted in `/metrics` and kept current by the service's listener.
        case sized
        /// One the caller keeps current with a listener of its own (a test's), or none (a one-off command, which
        /// has no listener).
        case given(ExactCache?)
    }

    /// The settings.
    public var settings: Settings
    /// `openapi.yaml` as served (``OpenAPIDocument/serving(_:publicURL:)``); empty when not needed.
    public var openAPIDocument: [UInt8]
    /// The try-it page at `GET /docs`.
    public var docsPage: DocsPage
    /// The logger of each part, by label: `graph`, `limited`, `http`, `events`, `webhooks`.
    public var logger: @Sendable (_ label: String) -> Logger

    /// The exact cache. Default `.sized`.
    public var cache = Cache.sized
    /// Graph's client. Default: `FBS_GRAPH_URL`, `FBS_GRAPH_VERSION`, `FBS_GRAPH_TIMEOUT`.
    public var graph: GraphClient.Configuration
    /// Limited Login's client. Default: `FBS_LIMITED_JWKS_URL`, `FBS_LIMITED_UNINSTALL_URL`, `FBS_GRAPH_TIMEOUT`.
    public var limitedLoginClient: LimitedLoginClient.Configuration
    /// Limited Login's nonce lifetime and leeway. Default: the contract's.
    public var limitedLogin = LimitedLogin.Configuration()
    /// The signing-key cache's max-ages and refetch budget. Default: the contract's.
    public var signingKeys = SigningKeyCache.Policy()
    /// The signing-key cache's clock (tests move it by hand). Default: the system's.
    public var signingKeyClock: @Sendable () -> Date = Date.init
    /// Pictures' lifetimes and fetch limits. Default: `FBS_PICTURE_MAX_BYTES`, `FBS_GRAPH_TIMEOUT` per fetch.
    public var pictures: PictureService.Policy
    /// Whether pictures are also kept in memory, in front of the database. Default true.
    public var keepsPicturesInMemory = true
    /// Most long-poll readers at once; nil: ``EventWaiters``'s own default.
    public var maxEventWaiters: Int?
    /// Routes served besides the contract's: a route test's probes; none in the service.
    public var extraRoutes: [Route] = []
    /// The clock of the API keys' rate limits, in seconds (tests move it by hand). Default: a monotonic one.
    public var rateLimitClock: @Sendable () -> Double = RateLimiter.monotonicSeconds
    /// Where spans go when the settings turn tracing on; nil (default): OTLP/HTTP to the configured endpoint. Tests
    /// give an in-memory exporter.
    public var spanExporter: (any SpanExporter)?

    /// The parts `settings` describe.
    ///
    /// - Parameters:
    ///   - settings: The settings.
    ///   - openAPIDocument: `openapi.yaml` as served.
    ///   - docsPage: The page at `GET /docs`.
    ///   - logger: The logger of each part, by label; by default one at `FBS_LOG_LEVEL` to standard error.
    public init(
        settings: Settings, openAPIDocument: [UInt8] = [], docsPage: DocsPage = .placeholder,
        logger: (@Sendable (_ label: String) -> Logger)? = nil
    ) {
        self.settings = settings
        self.openAPIDocument = openAPIDocument
        self.docsPage = docsPage
        let level = settings.logLevel
        self.logger = logger ?? { Logger(label: $0, level: level) }
        graph = GraphClient.Configuration(settings: settings)
        limitedLoginClient = LimitedLoginClient.Configuration(settings: settings)
        pictures = PictureService.Policy(
            limits: PictureFetchLimits(maxBytes: settings.pictureMaxBytes, timeout: settings.graphTimeout),
            graphTimeout: settings.graphTimeout)
    }
}

/// The database the service keeps everything in, and what goes with it.
public struct ServiceDatabase: Sendable {
    /// The pool's database (through `DATABASE_URL`, perhaps a pooler).
    public var database: Database
    /// Encrypts app secrets, tokens and webhook secrets.
    public var keyring: Keyring
    /// The migrations `/readyz` compares with the database.
    public var migrator: Migrator
    /// Where the event listener connects: past any pooler, since `LISTEN` needs a server session of its own.
    public var listenerURL: String

    /// Collects the parts.
    public init(database: Database, keyring: Keyring, migrator: Migrator, listenerURL: String) {
        self.database = database
        self.keyring = keyring
        self.migrator = migrator
        self.listenerURL = listenerURL
    }
}

extension SessionService.Policy {
    /// The policy the settings describe: `FBS_VALIDATE_TTL`, `FBS_REFRESH_AFTER`, `FBS_MAX_SLOTS`,
    /// `FBS_GRAPH_VERSION`, `FBS_GRAPH_TIMEOUT`.
    public init(settings: Settings) {
        self.init(
            validateTTL: Double(settings.validateTTL), refreshAfter: Double(settings.refreshAfter),
            maxSlots: settings.maxSlots, graphVersion: settings.graphVersion, graphTimeout: settings.graphTimeout)
        auditsTokenReads = settings.auditTokenReads
    }
}
