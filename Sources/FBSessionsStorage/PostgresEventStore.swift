import FBSessionsCore
import Foundation
import Postgres

/// ``EventStore`` over the `events` table.
///
/// An event is returned only when its transaction id is below the current snapshot's `xmin`: its transaction
/// and every transaction that started before it have ended. Pages are ordered by `(tx, id)`, so an event that
/// commits after a reader passed later ids still sorts after the reader's cursor: no cursor ever skips one.
/// The price is that one long transaction anywhere on the server holds back the feed until it ends.
///
/// A page with events is returned only once every one of them is durable on the synchronous standby: the read
/// runs in a transaction whose commit then waits for the standby
/// (``PostgresConnection/confirmDurabilityAtCommit()``), so a failover may delay an event but never take back
/// one the feed showed. A commit can be visible on the
/// primary before the standby has it: a backend whose wait for the standby ended early (its postmaster died,
/// or a cancel request came) still ends its transaction there. docs/high-availability.md has the cases.
public struct PostgresEventStore: EventStore {
    private let database: Database

    /// Creates the store.
    ///
    /// - Parameter database: The pool.
    public init(database: Database) {
        self.database = database
    }

    public func events(appID: String, after cursor: EventCursor?, limit: Int) async throws -> EventPage {
        try await database.transaction { connection in
            let page = try Self.read(on: connection, appID: appID, after: cursor, limit: limit, checkPending: true)
            if !page.events.isEmpty {
                try connection.confirmDurabilityAtCommit()
            }
            return page
        }
    }

    /// Reads one page on `connection` (the webhook dispatcher reads the same way).
    ///
    /// - Parameters:
    ///   - connection: A connection; any open transaction's snapshot decides what is visible.
    ///   - appID: The app.
    ///   - cursor: Where to start after, or `nil` for the beginning.
    ///   - limit: The most events, clamped to ``EventFeed/limits``.
    ///   - checkPending: Whether an empty page also asks if invisible events wait after the cursor.
    /// - Returns: The page.
    /// - Throws: `PostgresError` from the queries or from decoding.
    static func read(
        on connection: PostgresConnection, appID: String, after cursor: EventCursor?, limit: Int, checkPending: Bool
    ) throws -> EventPage {
        let start = cursor ?? .start
        let limit = min(max(limit, EventFeed.limits.lowerBound), EventFeed.limits.upperBound)
        let transaction = String(start.transactionID)
        let rows = try connection.query(
            """
            SELECT e.id, e.tx::text::bigint AS tx, e.type, e.session_id, e.owner, e.at, e.data::text AS data
            FROM events e
            WHERE e.app_id = \(appID) AND (e.tx, e.id) > (\(transaction)::xid8, \(start.eventID)::bigint)
              AND e.tx < pg_snapshot_xmin(pg_current_snapshot())
            ORDER BY e.tx, e.id
            LIMIT \(limit)
            """)
        let events = try rows.map(Self.event)
        var pending = false
        if events.isEmpty, checkPending {
            pending =
                try connection.query(
                    """
                    SELECT EXISTS (
                        SELECT 1 FROM events e
                        WHERE e.app_id = \(appID) AND (e.tx, e.id) > (\(transaction)::xid8, \(start.eventID)::bigint)
                    ) AS pending
                    """
                ).first?.decode("pending", as: Bool.self) ?? false
        }
        return EventPage(events: events, nextCursor: events.last?.cursor ?? start, hasPendingEvents: pending)
    }

    /// The last visible event of the app, or ``EventCursor/start`` when it has none: where a new webhook
    /// begins, so that it gets what happens from now on.
    ///
    /// - Parameters:
    ///   - connection: A connection.
    ///   - appID: The app.
    /// - Returns: The cursor.
    /// - Throws: `PostgresError`.
    static func end(on connection: PostgresConnection, appID: String) throws -> EventCursor {
        let rows = try connection.query(
            """
            SELECT e.id, e.tx::text::bigint AS tx FROM events e
            WHERE e.app_id = \(appID) AND e.tx < pg_snapshot_xmin(pg_current_snapshot())
            ORDER BY e.tx DESC, e.id DESC
            LIMIT 1
            """)
        guard let row = rows.first else { return .start }
        return try cursor(from: row)
    }

    /// Decodes the `tx` (as bigint) and `id` columns into a cursor.
    static func cursor(from row: PostgresRow) throws -> EventCursor {
        // An xid8 is epoch << 32 | xid; it passes 2^63 only after 2^31 wraparounds, so bigint holds it.
        let transaction = try row.decode("tx", as: Int64.self)
        return EventCursor(transactionID: UInt64(max(0, transaction)), eventID: try row.decode("id", as: Int64.self))
    }

    /// Decodes one row of the page query.
    static func event(from row: PostgresRow) throws -> FeedEvent {
        FeedEvent(
            id: try row.decode("id"), type: try row.decode("type"),
            sessionID: try row.decode("session_id", as: String?.self), owner: try row.decode("owner", as: String?.self),
            at: try row.decode("at"), data: Array(try row.decode("data", as: String.self).utf8),
            cursor: try cursor(from: row))
    }
}
