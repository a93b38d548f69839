import FBSessionsCore
import Foundation
import Postgres

/// ``AuditLog`` over the `audit_log` table (migration 0014).
///
/// Pages are read as the events feed reads them (``PostgresEventStore``): ordered by the writing transaction and
/// the id, and only entries whose transaction is below the snapshot's `xmin`, so that no cursor skips an entry
/// that commits late; and, like a page of the feed, a page with entries is returned only once they are durable on
/// the synchronous standby (``PostgresConnection/confirmDurabilityAtCommit()``), so a failover never takes back an
/// entry that was shown. Nothing here updates or deletes a row, except ``prune(retentionDays:)`` through
/// `fbs_prune_audit`, the one deletion path the table's trigger lets pass.
public struct PostgresAuditLog: AuditLog {
    private let database: Database

    /// Creates the log.
    ///
    /// - Parameter database: The pool.
    public init(database: Database) {
        self.database = database
    }

    public func append(_ entry: AuditDraft) async throws {
        try await database.run { connection in try Self.append(entry, on: connection) }
    }

    public func entries(appID: String, after cursor: AuditCursor?, limit: Int) async throws -> AuditPage {
        try await database.transaction { connection in
            let page = try Self.read(on: connection, appID: appID, after: cursor, limit: limit)
            if !page.entries.isEmpty {
                try connection.confirmDurabilityAtCommit()
            }
            return page
        }
    }

    public func prune(retentionDays: Int) async throws -> Int {
        try await database.run { connection in try Self.prune(retentionDays: retentionDays, on: connection) }
    }

    /// Appends `entry` on `connection` (in its transaction, if one is open).
    ///
    /// - Throws: `PostgresError`.
    static func append(_ entry: AuditDraft, on connection: PostgresConnection) throws {
        _ = try connection.execute(
            """
            INSERT INTO audit_log (app_id, action, actor, target, request_id)
            VALUES (\(entry.appID), \(entry.action.rawValue), \(entry.actor.json)::jsonb, \(entry.targetJSON)::jsonb,
                    \(entry.requestID))
            """)
    }

    /// Deletes the entries past `retentionDays` through `fbs_prune_audit`.
    ///
    /// - Throws: `PostgresError` (the function refuses a retention under a day).
    static func prune(retentionDays: Int, on connection: PostgresConnection) throws -> Int {
        let rows = try connection.query("SELECT fbs_prune_audit(\(retentionDays)::integer) AS removed")
        return Int(try rows.first?.decode("removed", as: Int64.self) ?? 0)
    }

    /// Reads one page on `connection`.
    ///
    /// - Parameters:
    ///   - appID: The reading key's app: its entries and those of no app.
    ///   - cursor: Where to start after, or `nil` for the beginning.
    ///   - limit: The most entries, clamped to ``AuditPolicy/limits``.
    static func read(
        on connection: PostgresConnection, appID: String, after cursor: AuditCursor?, limit: Int
    ) throws -> AuditPage {
        let start = cursor ?? .start
        let limit = min(max(limit, AuditPolicy.limits.lowerBound), AuditPolicy.limits.upperBound)
        let transaction = String(start.transactionID)
        let rows = try connection.query(
            """
            SELECT a.id, a.tx::text::bigint AS tx, a.at, a.action, a.actor::text AS actor, a.target::text AS target,
                   a.request_id
            FROM audit_log a
            WHERE (a.app_id = \(appID) OR a.app_id IS NULL)
              AND (a.tx, a.id) > (\(transaction)::xid8, \(start.entryID)::bigint)
              AND a.tx < pg_snapshot_xmin(pg_current_snapshot())
            ORDER BY a.tx, a.id
            LIMIT \(limit)
            """)
        let entries = try rows.map { row in
            // An xid8 is epoch << 32 | xid; it passes 2^63 only after 2^31 wraparounds, so bigint holds it.
            let tx = try row.decode("tx", as: Int64.self)
            let id = try row.decode("id", as: Int64.self)
            return AuditEntry(
                id: id, at: try row.decode("at"), action: try row.decode("action"), actor: try row.decode("actor"),
                target: try row.decode("target"), requestID: try row.decode("request_id", as: String?.self),
                cursor: AuditCursor(transactionID: UInt64(max(0, tx)), entryID: id))
        }
        return AuditPage(entries: entries, nextCursor: entries.last?.cursor ?? start)
    }
}
