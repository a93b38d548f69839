import Foundation

/// A URL of an app that receives each event of the app's feed as a signed POST (see ``WebhookSignature``).
public struct Webhook: Sendable, Equatable {
    /// The id (`whk_` and 16 hex digits), for `webhook remove`.
    public let id: String
    /// The app whose events it receives.
    public let appID: String
    /// Where events are posted.
    public let url: String
    /// When it was added.
    public let createdAt: Date
    /// When it was removed; nothing is sent after that.
    public let disabledAt: Date?
    /// Deliveries not yet answered with a 2xx.
    public let pendingDeliveries: Int

    /// Creates a webhook value.
    public init(id: String, appID: String, url: String, createdAt: Date, disabledAt: Date?, pendingDeliveries: Int) {
        self.id = id
        self.appID = appID
        self.url = url
        self.createdAt = createdAt
        self.disabledAt = disabledAt
        self.pendingDeliveries = pendingDeliveries
    }

    /// The longest URL accepted.
    public static let maxURLBytes = 2048

    /// What is wrong with a webhook URL, or `nil` when it is an absolute `http` or `https` URL with a host,
    /// without user info or fragment, of at most ``maxURLBytes`` bytes.
    public static func problem(withURL url: String) -> String? {
        guard url.utf8.count <= maxURLBytes else { return "the URL is longer than \(maxURLBytes) bytes" }
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "https" || scheme == "http", let host = components.host, !host.isEmpty
        else { return "the URL must be an absolute http or https URL" }
        guard components.user == nil, components.password == nil, components.fragment == nil else {
            return "the URL must not contain user info or a fragment"
        }
        return nil
    }
}

/// One delivery of one event to one webhook, with its latest outcome.
public struct WebhookDelivery: Sendable, Equatable {
    /// The webhook.
    public let webhookID: String
    /// The event.
    public let eventID: Int64
    /// Attempts made so far.
    public let attempts: Int
    /// The status of the last answer, or `nil` when none came (connection failure, timeout).
    public let lastStatus: Int?
    /// What went wrong last (`status 500`, `timeout`, ...); never a URL, secret or body.
    public let lastError: String?
    /// When the last attempt started.
    public let lastAttemptAt: Date?
    /// When the next attempt is due, while not delivered.
    public let nextAttemptAt: Date
    /// When a 2xx answer came.
    public let deliveredAt: Date?

    /// Creates a delivery value.
    public init(
        webhookID: String, eventID: Int64, attempts: Int, lastStatus: Int?, lastError: String?, lastAttemptAt: Date?,
        nextAttemptAt: Date, deliveredAt: Date?
    ) {
        self.webhookID = webhookID
        self.eventID = eventID
        self.attempts = attempts
        self.lastStatus = lastStatus
        self.lastError = lastError
        self.lastAttemptAt = lastAttemptAt
        self.nextAttemptAt = nextAttemptAt
        self.deliveredAt = deliveredAt
    }
}

/// Storage for webhooks. Implemented over PostgreSQL in FBSessionsStorage.
public protocol WebhookStore: Sendable {
    /// Adds a webhook for the app with a new signing secret, sealed with the key ring. It receives the events
    /// written from now on.
    ///
    /// - Returns: The webhook and its secret (`whsec_…`), to show once.
    /// - Throws: ``ServiceError/unknownApp(_:)`` when the app does not exist.
    func addWebhook(appID: String, url: String) async throws -> (webhook: Webhook, secret: String)
    /// Every webhook, optionally of one app, removed ones included; never a secret.
    func webhooks(appID: String?) async throws -> [Webhook]
    /// Removes a webhook: nothing more is sent. False when there is no active webhook with this id.
    func removeWebhook(id: String) async throws -> Bool
    /// The webhook's latest deliveries, newest event first.
    func deliveries(webhookID: String, limit: Int) async throws -> [WebhookDelivery]
}
