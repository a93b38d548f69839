import Crypto
import FBSessionsCore
import Foundation
import Postgres

/// ``WebhookStore`` over PostgreSQL. Signing secrets are sealed with the key ring, bound to the webhook's id.
public struct PostgresWebhookStore: WebhookStore {
    private let database: Database
    private let keyring: Keyring

    /// Creates the store.
    ///
    /// - Parameters:
    ///   - database: The pool.
    ///   - keyring: Seals new secrets (and opens them, in ``WebhookDispatcher``).
    public init(database: Database, keyring: Keyring) {
        self.database = database
        self.keyring = keyring
    }

    private static let columns: StaticString = """
        w.id, w.app_id, w.url, w.created_at, w.disabled_at, \
        (SELECT count(*) FROM webhook_deliveries d WHERE d.webhook_id = w.id AND d.delivered_at IS NULL) AS pending
        """

    public func addWebhook(appID: String, url: String) async throws -> (webhook: Webhook, secret: String) {
        let id = "whk_" + Hex.encode(SecureRandom.bytes(8))
        let secret = "whsec_" + SecureRandom.token(byteCount: 32)
        let sealed = try keyring.seal(Array(secret.utf8), context: id)
        let webhook = try await database.transaction { connection in
            guard try connection.query("SELECT 1 FROM apps WHERE id = \(appID) FOR SHARE").count == 1 else {
                throw ServiceError.unknownApp(appID)
            }
            // Start at the end of the feed: the webhook gets what happens from now on.
            let start = try PostgresEventStore.end(on: connection, appID: appID)
            try connection.execute(
                """
                INSERT INTO webhooks (id, app_id, url, secret_key_id, secret_box, cursor_tx, cursor_id)
                VALUES (\(id), \(appID), \(url), \(sealed.keyID), \(sealed.box),
                        \(String(start.transactionID))::xid8, \(start.eventID))
                """)
            let rows = try connection.query("SELECT \(unsafeSQL: Self.columns) FROM webhooks w WHERE w.id = \(id)")
            guard let row = rows.first else { throw ServiceError.unknownApp(appID) }
            return try Self.webhook(from: row)
        }
        return (webhook, secret)
    }

    public func webhooks(appID: String?) async throws -> [Webhook] {
        try await database.run { connection in
            try connection.query(
                """
                SELECT \(unsafeSQL: Self.columns) FROM webhooks w
                WHERE \(appID)::text IS NULL OR w.app_id = \(appID)
                ORDER BY w.created_at, w.id
                """
            ).map(Self.webhook)
        }
    }

    public func removeWebhook(id: String) async throws -> Bool {
        try await database.run { connection in
            try connection.execute("UPDATE webhooks SET disabled_at = now() WHERE id = \(id) AND disabled_at IS NULL")
                > 0
        }
    }

    public func deliveries(webhookID: String, limit: Int) async throws -> [WebhookDelivery] {
        try await database.run { connection in
            try connection.query(
                """
                SELECT webhook_id, event_id, attempts, last_status, last_error, last_attempt_at, next_attempt_at,
                       delivered_at
                FROM webhook_deliveries WHERE webhook_id = \(webhookID)
                ORDER BY event_id DESC
                LIMIT \(max(1, limit))
                """
            ).map(Self.delivery)
        }
    }

    static func webhook(from row: PostgresRow) throws -> Webhook {
        Webhook(
            id: try row.decode("id"), appID: try row.decode("app_id"), url: try row.decode("url"),
            createdAt: try row.decode("created_at"), disabledAt: try row.decode("disabled_at", as: Date?.self),
            pendingDeliveries: try row.decode("pending"))
    }

    static func delivery(from row: PostgresRow) throws -> WebhookDelivery {
        WebhookDelivery(
            webhookID: try row.decode("webhook_id"), eventID: try row.decode("event_id"),
            attempts: try row.decode("attempts"), lastStatus: try row.decode("last_status", as: Int?.self),
            lastError: try row.decode("last_error", as: String?.self),
            lastAttemptAt: try row.decode("last_attempt_at", as: Date?.self),
            nextAttemptAt: try row.decode("next_attempt_at"),
            deliveredAt: try row.decode("delivered_at", as: Date?.self))
    }
}
