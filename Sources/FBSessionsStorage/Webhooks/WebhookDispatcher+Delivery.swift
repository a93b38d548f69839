import FBSessionsCore
import Foundation
import Postgres
import Support
import Tracing

extension WebhookDispatcher {
    /// A delivery claimed for one attempt, with what sending it needs.
    struct Claim: Sendable {
        let webhookID: String
        let attempt: Int
        let url: String
        let sealedSecret: Keyring.Sealed
        let event: FeedEvent
    }

    /// Turns new feed events into delivery rows for every active webhook this instance can lock.
    ///
    /// - Returns: The rows created, and whether some webhook had a full batch (more may be waiting).
    func enqueue() async throws -> (count: Int, more: Bool) {
        let limit = configuration.batchSize
        return try await database.transaction { connection in
            let hooks = try connection.query(
                """
                SELECT id AS webhook_id, app_id, cursor_tx::text::bigint AS cursor_tx, cursor_id
                FROM webhooks WHERE disabled_at IS NULL
                ORDER BY id
                FOR UPDATE SKIP LOCKED
                """)
            var total = 0
            var more = false
            for hook in hooks {
                let webhookID: String = try hook.decode("webhook_id")
                let cursor = EventCursor(
                    transactionID: UInt64(max(0, try hook.decode("cursor_tx", as: Int64.self))),
                    eventID: try hook.decode("cursor_id"))
                let page = try PostgresEventStore.read(
                    on: connection, appID: try hook.decode("app_id"), after: cursor, limit: limit, checkPending: false)
                guard let last = page.events.last else { continue }
                let ids = page.events.map { String($0.id) }
                total += try connection.execute(
                    """
                    INSERT INTO webhook_deliveries (webhook_id, event_id)
                    SELECT \(webhookID), unnest(\(ids)::bigint[])
                    ON CONFLICT DO NOTHING
                    """)
                try connection.execute(
                    """
                    UPDATE webhooks SET cursor_tx = \(String(last.cursor.transactionID))::xid8,
                                        cursor_id = \(last.cursor.eventID)
                    WHERE id = \(webhookID)
                    """)
                more = more || page.events.count == limit
            }
            return (total, more)
        }
    }

    /// Claims up to a batch of due deliveries: one statement that locks them (`SKIP LOCKED`), counts the
    /// attempt and moves `next_attempt_at` past the lease, committed before anything is sent.
    ///
    /// The claim returns only once its commit is durable on the synchronous standby, like a page of the feed
    /// (``PostgresEventStore``): the deliveries it saw, and the events they carry, were committed before it, so no
    /// failover can take back an event that a webhook was sent. (Its own write would wait for the standby under
    /// the server's usual settings; ``PostgresConnection/confirmDurabilityAtCommit()`` makes it wait whatever the
    /// role's `synchronous_commit`.)
    func claim() async throws -> [Claim] {
        let limit = configuration.batchSize
        let lease = Self.seconds(configuration.lease)
        return try await database.transaction { connection in
            let claims = try Self.claim(on: connection, limit: limit, lease: lease)
            if !claims.isEmpty {
                try connection.confirmDurabilityAtCommit()
            }
            return claims
        }
    }

    private static func claim(on connection: PostgresConnection, limit: Int, lease: Double) throws -> [Claim] {
        try connection.query(
            """
            WITH due AS (
                SELECT d.webhook_id, d.event_id
                FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
                WHERE d.delivered_at IS NULL AND d.next_attempt_at <= now() AND w.disabled_at IS NULL
                ORDER BY d.next_attempt_at, d.event_id
                LIMIT \(limit)
                FOR UPDATE OF d SKIP LOCKED
            ), claimed AS (
                UPDATE webhook_deliveries d
                SET attempts = d.attempts + 1, last_attempt_at = now(),
                    next_attempt_at = now() + make_interval(secs => \(lease))
                FROM due WHERE d.webhook_id = due.webhook_id AND d.event_id = due.event_id
                RETURNING d.webhook_id, d.event_id, d.attempts
            )
            SELECT c.webhook_id, c.attempts, w.url, w.secret_key_id, w.secret_box,
                   e.id, e.tx::text::bigint AS tx, e.type, e.session_id, e.owner, e.at, e.data::text AS data
            FROM claimed c JOIN webhooks w ON w.id = c.webhook_id JOIN events e ON e.id = c.event_id
            ORDER BY e.tx, e.id
            """
        ).map { row in
            Claim(
                webhookID: try row.decode("webhook_id"), attempt: try row.decode("attempts"),
                url: try row.decode("url"),
                sealedSecret: Keyring.Sealed(
                    keyID: try row.decode("secret_key_id"), box: try row.decode("secret_box")),
                event: try PostgresEventStore.event(from: row))
        }
    }

    /// Sends one claimed delivery and records the outcome.
    ///
    /// With tracing on, each delivery sampled is the root of a trace of its own: a CLIENT span `webhook delivery`
    /// (`server.address` the receiver's host, never its URL), whose `traceparent` the POST carries; recording the
    /// outcome is its child. A root, not a child of the request that caused the event: deliveries are made later,
    /// by another task, often for many requests' events at once (docs/operations.md, "Traces").
    ///
    /// - Returns: Whether the receiver answered with a 2xx.
    func deliver(_ claim: Claim) async -> Bool {
        guard let tracer, let span = tracer.root("webhook delivery") else { return await deliver(claim, span: nil) }
        span.set("http.request.method", "POST")
        if let host = URLComponents(string: claim.url)?.host { span.set("server.address", host) }
        span.set("fbs.webhook_id", claim.webhookID)
        defer { span.end() }
        return await tracer.withSpan(span) { await deliver(claim, span: span) }
    }

    private func deliver(_ claim: Claim, span: Span?) async -> Bool {
        var metadata: [String: Logger.Value] = [
            "webhook_id": .string(claim.webhookID), "event_id": .string(String(claim.event.id)),
            "attempt": .int(claim.attempt),
        ]
        let status: Int?
        let problem: String?
        do {
            var (headers, body) = try request(for: claim)
            if let span { headers.append(("traceparent", TraceParent.header(for: span.context))) }
            let answer = try await transport.post(
                url: claim.url, headers: headers, body: body, timeout: configuration.requestTimeout)
            status = answer
            problem = (200..<300).contains(answer) ? nil : "status \(answer)"
            span?.set("http.response.status_code", answer)
        } catch let error as WebhookTransportError {
            if error.isCancellation || Task.isCancelled {
                return false  // Stopping: the lease runs out and the delivery is retried.
            }
            status = nil
            problem = error.problem
        } catch {
            if Task.isCancelled {
                return false
            }
            status = nil
            problem = "the signing secret does not decrypt with FBS_ENCRYPTION_KEYS"
        }
        if problem != nil { span?.setError("delivery failed") }
        let delay = configuration.retryDelay(afterAttempts: claim.attempt)
        do {
            try await record(claim, status: status, problem: problem, retryIn: delay)
        } catch {
            metadata["error"] = .string(String(describing: error))
            logger.warning("webhook outcome not recorded; the delivery is retried after its lease", metadata)
            return problem == nil
        }
        if let problem {
            metadata["problem"] = .string(problem)
            metadata["retry_in_ms"] = .int(Int(Self.seconds(delay) * 1000))
            logger.warning("webhook delivery failed", metadata)
        } else {
            logger.debug("webhook delivered", metadata)
        }
        return problem == nil
    }

    /// The headers and body of the signed POST for a claim.
    private func request(for claim: Claim) throws -> (headers: [(String, String)], body: [UInt8]) {
        let secret = String(decoding: try keyring.open(claim.sealedSecret, context: claim.webhookID), as: UTF8.self)
        let body = Array(claim.event.json.utf8)
        let timestamp = Int(Date().timeIntervalSince1970)
        return (
            [
                ("Content-Type", "application/json"),
                (
                    WebhookSignature.headerName,
                    WebhookSignature.header(secret: secret, timestamp: timestamp, body: body)
                ),
                ("X-FBS-Event-Id", String(claim.event.id)),
                ("X-FBS-Event-Type", claim.event.type),
                ("X-FBS-Webhook-Id", claim.webhookID),
                ("X-FBS-Delivery-Attempt", String(claim.attempt)),
            ],
            body
        )
    }

    /// Marks the delivery done, or schedules its next attempt.
    private func record(_ claim: Claim, status: Int?, problem: String?, retryIn delay: Duration) async throws {
        let webhookID = claim.webhookID
        let eventID = claim.event.id
        let seconds = Self.seconds(delay)
        _ = try await database.run { connection in
            if let problem {
                return try connection.execute(
                    """
                    UPDATE webhook_deliveries
                    SET next_attempt_at = now() + make_interval(secs => \(seconds)), last_status = \(status),
                        last_error = \(problem)
                    WHERE webhook_id = \(webhookID) AND event_id = \(eventID) AND delivered_at IS NULL
                    """)
            } else {
                return try connection.execute(
                    """
                    UPDATE webhook_deliveries SET delivered_at = now(), last_status = \(status), last_error = NULL
                    WHERE webhook_id = \(webhookID) AND event_id = \(eventID)
                    """)
            }
        }
    }

    /// The time until the earliest undelivered delivery of an active webhook falls due, if there is one. The same
    /// statement counts those deliveries and ages the oldest, for ``backlog``: it reads the same rows already.
    func nextDue() async throws -> Duration? {
        let (due, reading) = try await database.run { connection in
            let rows = try connection.query(
                """
                SELECT extract(epoch FROM min(d.next_attempt_at) - now())::float8 AS due,
                       count(*)::bigint AS pending,
                       coalesce(extract(epoch FROM now() - min(d.created_at)), 0)::float8 AS oldest
                FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
                WHERE d.delivered_at IS NULL AND w.disabled_at IS NULL
                """)
            guard let row = rows.first else { return (Double?.none, BacklogReading()) }
            let reading = BacklogReading(
                pending: Int(try row.decode("pending", as: Int64.self)),
                oldestSeconds: max(0, try row.decode("oldest", as: Double.self)))
            return (try row.decode("due", as: Double?.self), reading)
        }
        lastBacklog.withLock { $0 = reading }
        guard let due else { return nil }
        return .milliseconds(Int(max(0, due) * 1000))
    }

    /// A duration in seconds.
    static func seconds(_ duration: Duration) -> Double {
        let (whole, fraction) = duration.components
        return Double(whole) + Double(fraction) / 1e18
    }
}
