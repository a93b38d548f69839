import FBSessionsCore
import Foundation
import Postgres

/// `session.expiring`, once per deadline (migration 0013).
///
/// A live standard session is due when `token_expires_at` or `data_access_expires_at` is still ahead but within
/// `FBS_EXPIRY_WARNING` seconds, and differs from the deadline last warned about (`expires_warned_for`,
/// `data_access_warned_for`). One statement locks the due rows (`FOR UPDATE SKIP LOCKED`, re-checking the condition
/// on the newest row version), sets the warned deadline and returns the rows; the events are written in the same
/// transaction. So two instances, two sweeps or a sweep and a read never both write one: the second finds the
/// deadline warned, or the row locked and skips it (the other transaction warns it, or it stays due for the next
/// look). A re-extension (or a reauthorization) moves the deadline away from the warned value, which arms it again.
///
/// Lock order: this never waits for a session row (it skips locked ones), so it takes no owner lock first.
/// A Limited Login session is never warned: its token is an hour-long proof of identity, not a grant that runs out.
extension PostgresSessionStore {
    public func warnExpiring(limit: Int) async throws -> Int {
        let warning = expiryWarning
        guard warning > 0, limit > 0 else { return 0 }
        return try await databaseTransaction { connection in
            try Self.warnExpiring(on: connection, warning: warning, limit: limit, only: nil)
        }
    }

    /// After a batched read: warns the sessions whose rows said `expiry_due`, in a transaction of its own on the
    /// read's connection. A failure here fails no read: the session stays due, and the sweep or the next read
    /// warns it.
    ///
    /// - Parameters:
    ///   - rows: The read's rows, with `id`, `app_id` and `expiry_due`.
    ///   - connection: The read's connection, with no transaction open.
    ///   - expiryWarning: `FBS_EXPIRY_WARNING`.
    static func warnNoticed(in rows: PostgresRows, on connection: PostgresConnection, expiryWarning: Double) {
        guard expiryWarning > 0 else { return }
        var due: [(id: String, appID: String)] = []
        for row in rows {
            guard (try? row.decode("expiry_due", as: Bool.self)) == true,
                let id = try? row.decode("id", as: String.self), let appID = try? row.decode("app_id", as: String.self)
            else { continue }
            if !due.contains(where: { $0.id == id }) { due.append((id, appID)) }
        }
        guard !due.isEmpty else { return }
        _ = try? connection.transaction { connection in
            try warnExpiring(on: connection, warning: expiryWarning, limit: due.count, only: due)
        }
    }

    /// Marks up to `limit` due sessions warned and writes their `session.expiring` events, in the caller's
    /// transaction: all due sessions, or only those in `only`.
    ///
    /// - Returns: How many events were written (a session may get two: one per deadline).
    /// - Throws: `PostgresError`.
    static func warnExpiring(
        on connection: PostgresConnection, warning: Double, limit: Int, only sessions: [(id: String, appID: String)]?
    ) throws -> Int {
        // The conditions are the partial indexes' predicates of migration 0013, written the same way so that the
        // planner proves them and scans only unwarned rows in the window.
        let rows: PostgresRows
        if let sessions {
            rows = try connection.query(
                """
                WITH due AS (
                    SELECT s.id,
                        (s.expires_warned_for IS DISTINCT FROM s.token_expires_at AND s.token_expires_at > now()
                            AND s.token_expires_at <= now() + make_interval(secs => \(warning))) AS warn_expires,
                        (s.data_access_warned_for IS DISTINCT FROM s.data_access_expires_at
                            AND s.data_access_expires_at > now()
                            AND s.data_access_expires_at <= now() + make_interval(secs => \(warning)))
                            AS warn_data_access
                    FROM sessions s
                    JOIN unnest(\(sessions.map(\.id))::text[], \(sessions.map(\.appID))::text[]) AS r(id, app_id)
                        ON s.id = r.id AND s.app_id = r.app_id
                    WHERE s.state <> 'closed' AND s.login_kind = 'standard'
                      AND ((s.expires_warned_for IS DISTINCT FROM s.token_expires_at AND s.token_expires_at > now()
                            AND s.token_expires_at <= now() + make_interval(secs => \(warning)))
                        OR (s.data_access_warned_for IS DISTINCT FROM s.data_access_expires_at
                            AND s.data_access_expires_at > now()
                            AND s.data_access_expires_at <= now() + make_interval(secs => \(warning))))
                    LIMIT \(limit)
                    FOR UPDATE OF s SKIP LOCKED
                )
                UPDATE sessions s SET
                    expires_warned_for = CASE WHEN due.warn_expires THEN s.token_expires_at
                        ELSE s.expires_warned_for END,
                    data_access_warned_for = CASE WHEN due.warn_data_access THEN s.data_access_expires_at
                        ELSE s.data_access_warned_for END
                FROM due WHERE s.id = due.id
                RETURNING s.id, s.app_id, s.owner, s.token_expires_at, s.data_access_expires_at,
                    coalesce(due.warn_expires, false) AS warn_expires,
                    coalesce(due.warn_data_access, false) AS warn_data_access
                """)
        } else {
            rows = try connection.query(
                """
                WITH due AS (
                    SELECT s.id,
                        (s.expires_warned_for IS DISTINCT FROM s.token_expires_at AND s.token_expires_at > now()
                            AND s.token_expires_at <= now() + make_interval(secs => \(warning))) AS warn_expires,
                        (s.data_access_warned_for IS DISTINCT FROM s.data_access_expires_at
                            AND s.data_access_expires_at > now()
                            AND s.data_access_expires_at <= now() + make_interval(secs => \(warning)))
                            AS warn_data_access
                    FROM sessions s
                    WHERE s.state <> 'closed' AND s.login_kind = 'standard'
                      AND ((s.expires_warned_for IS DISTINCT FROM s.token_expires_at AND s.token_expires_at > now()
                            AND s.token_expires_at <= now() + make_interval(secs => \(warning)))
                        OR (s.data_access_warned_for IS DISTINCT FROM s.data_access_expires_at
                            AND s.data_access_expires_at > now()
                            AND s.data_access_expires_at <= now() + make_interval(secs => \(warning))))
                    LIMIT \(limit)
                    FOR UPDATE OF s SKIP LOCKED
                )
                UPDATE sessions s SET
                    expires_warned_for = CASE WHEN due.warn_expires THEN s.token_expires_at
                        ELSE s.expires_warned_for END,
                    data_access_warned_for = CASE WHEN due.warn_data_access THEN s.data_access_expires_at
                        ELSE s.data_access_warned_for END
                FROM due WHERE s.id = due.id
                RETURNING s.id, s.app_id, s.owner, s.token_expires_at, s.data_access_expires_at,
                    coalesce(due.warn_expires, false) AS warn_expires,
                    coalesce(due.warn_data_access, false) AS warn_data_access
                """)
        }
        var byApp: [String: [SessionEvent]] = [:]
        var order: [String] = []
        for row in rows {
            let id = try row.decode("id", as: String.self)
            let appID = try row.decode("app_id", as: String.self)
            let owner = try row.decode("owner", as: String.self)
            var events: [SessionEvent] = []
            if try row.decode("warn_expires", as: Bool.self),
                let deadline = try row.decode("token_expires_at", as: Date?.self)
            {
                events.append(.expiring(.expiresAt, at: deadline, sessionID: id, owner: owner))
            }
            if try row.decode("warn_data_access", as: Bool.self),
                let deadline = try row.decode("data_access_expires_at", as: Date?.self)
            {
                events.append(.expiring(.dataAccessExpiresAt, at: deadline, sessionID: id, owner: owner))
            }
            if byApp[appID] == nil { order.append(appID) }
            byApp[appID, default: []] += events
        }
        var written = 0
        for appID in order {
            let events = byApp[appID] ?? []
            try EventWriter.write(events, appID: appID, on: connection)
            written += events.count
        }
        return written
    }
}
