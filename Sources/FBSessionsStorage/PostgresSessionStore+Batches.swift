import FBSessionsCore
import Postgres

/// One status read: a session of an app.
struct SessionRead: Sendable {
    let id: String
    let appID: String
}

/// One owner's list read: an owner of an app.
struct OwnerListRead: Sendable {
    let owner: String
    let appID: String
}

/// The batched hot reads (``ReadBatcher``, docs/caching.md): one statement answers many requests, each request
/// with its own app. The items go in as parallel text arrays, unnested with their position (`WITH ORDINALITY`),
/// so every row names the request it answers and every request gets at least one row (the data is left-joined).
///
/// Each row also says whether its session is due for `session.expiring` (`expiry_due`, computed in the same
/// statement from columns already read): a read that notices one warns right after, on the same connection
/// (``warnNoticed(in:on:expiryWarning:)``). When nothing is due, which is nearly always, a read costs what it did.
extension PostgresSessionStore {
    static func fetchSessions(_ connection: PostgresConnection, _ reads: [SessionRead], expiryWarning: Double) throws
        -> [Result<Session?, any Error>]
    {
        let rows = try connection.query(
            """
            SELECT r.i AS batch_index, \(unsafeSQL: SessionRow.columns),
                coalesce(s.state <> 'closed' AND s.login_kind = 'standard' AND (
                    (s.expires_warned_for IS DISTINCT FROM s.token_expires_at AND s.token_expires_at > now()
                        AND s.token_expires_at <= now() + make_interval(secs => \(expiryWarning)))
                    OR (s.data_access_warned_for IS DISTINCT FROM s.data_access_expires_at
                        AND s.data_access_expires_at > now()
                        AND s.data_access_expires_at <= now() + make_interval(secs => \(expiryWarning)))), false)
                    AS expiry_due
            FROM unnest(\(reads.map(\.id))::text[], \(reads.map(\.appID))::text[])
                WITH ORDINALITY AS r(session_id, app_id, i)
            LEFT JOIN \(unsafeSQL: SessionRow.joined) ON s.id = r.session_id AND s.app_id = r.app_id
            """)
        let answers: [Result<Session?, any Error>] = BatchAnswers.byIndex(rows, count: reads.count) { _, row in
            guard try row.decode("id", as: String?.self) != nil else { return nil }
            return try SessionRow.session(from: row)
        }
        warnNoticed(in: rows, on: connection, expiryWarning: expiryWarning)
        return answers
    }

    static func fetchOwnerLists(_ connection: PostgresConnection, _ reads: [OwnerListRead], expiryWarning: Double)
        throws -> [Result<[Session], any Error>]
    {
        let rows = try connection.query(
            """
            SELECT r.i AS batch_index, \(unsafeSQL: SessionRow.columns),
                coalesce(s.state <> 'closed' AND s.login_kind = 'standard' AND (
                    (s.expires_warned_for IS DISTINCT FROM s.token_expires_at AND s.token_expires_at > now()
                        AND s.token_expires_at <= now() + make_interval(secs => \(expiryWarning)))
                    OR (s.data_access_warned_for IS DISTINCT FROM s.data_access_expires_at
                        AND s.data_access_expires_at > now()
                        AND s.data_access_expires_at <= now() + make_interval(secs => \(expiryWarning)))), false)
                    AS expiry_due
            FROM unnest(\(reads.map(\.owner))::text[], \(reads.map(\.appID))::text[])
                WITH ORDINALITY AS r(owner, app_id, i)
            LEFT JOIN \(unsafeSQL: SessionRow.joined)
                ON s.app_id = r.app_id AND s.owner = r.owner AND s.state <> 'closed'
            ORDER BY r.i, s.slot
            """)
        var answers = [Result<[Session], any Error>](
            repeating: .failure(PostgresBatchMismatch()), count: reads.count)
        var lists = [[Session]](repeating: [], count: reads.count)
        var seen = [Bool](repeating: false, count: reads.count)
        for row in rows {
            guard let index = try? row.decode("batch_index", as: Int.self) - 1, answers.indices.contains(index) else {
                continue
            }
            if !seen[index] {
                seen[index] = true
                answers[index] = .success([])
            }
            guard case .success = answers[index] else { continue }
            do {
                if try row.decode("id", as: String?.self) != nil {
                    lists[index].append(try SessionRow.session(from: row))
                }
            } catch {
                answers[index] = .failure(error)
            }
        }
        for index in answers.indices {
            if case .success = answers[index] { answers[index] = .success(lists[index]) }
        }
        warnNoticed(in: rows, on: connection, expiryWarning: expiryWarning)
        return answers
    }
}
