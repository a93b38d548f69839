import FBSessionsCore
import Postgres

/// One status read: a session of an app.
struct SessionRead: Sendable {
    let id: String
    let appID: String
}

/// One token read: a session of an app, and who reads its token (nil: a read the service makes for itself, which
/// leaves no audit entry).
struct TokenRead: Sendable {
    let id: String
    let appID: String
    let stamp: AuditStamp?
}

/// A session as a token read finds it, with its sealed token (nil when it holds none).
typealias SealedSession = (session: Session, sealed: Keyring.Sealed?)

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

    /// Token reads, each with its `token.read` entry when it has a stamp, in one statement (a data-modifying CTE)
    /// and so one commit: a token is never handed out without its entry, and under load many reads share the
    /// commit that makes their entries durable (docs/api-contract.md, "Audit log").
    ///
    /// An entry is written when the session is live, of kind `standard` and holds a token: when the caller is
    /// about to get it (a token no key opens still leaves its entry). The entries go in in the requests' order.
    /// An unstamped read passes empty strings for the actor and the request id, which `NULLIF` turns into "no entry"
    /// and "no request id" (a text array holds no NULL here).
    static func fetchTokens(_ connection: PostgresConnection, _ reads: [TokenRead]) throws
        -> [Result<SealedSession?, any Error>]
    {
        let rows = try connection.query(
            """
            WITH found AS (
                SELECT r.i AS batch_index, NULLIF(r.actor, '')::jsonb AS reader, NULLIF(r.request_id, '') AS request_id,
                    \(unsafeSQL: SessionRow.columns), s.token_key_id, s.token_box
                FROM unnest(\(reads.map(\.id))::text[], \(reads.map(\.appID))::text[],
                        \(reads.map { $0.stamp?.actor.json ?? "" })::text[],
                        \(reads.map { $0.stamp?.requestID ?? "" })::text[])
                    WITH ORDINALITY AS r(session_id, app_id, actor, request_id, i)
                LEFT JOIN \(unsafeSQL: SessionRow.joined) ON s.id = r.session_id AND s.app_id = r.app_id
            ), noted AS (
                INSERT INTO audit_log (app_id, action, actor, target, request_id)
                SELECT found.app_id, 'token.read', found.reader, jsonb_build_object('kind', 'session', 'id', found.id),
                    found.request_id
                FROM found
                WHERE found.reader IS NOT NULL AND found.id IS NOT NULL AND found.state <> 'closed'
                    AND found.login_kind = 'standard' AND found.token_box IS NOT NULL
                ORDER BY found.batch_index
            )
            SELECT * FROM found
            """)
        return BatchAnswers.byIndex(rows, count: reads.count) { _, row in
            guard try row.decode("id", as: String?.self) != nil else { return nil }
            let sealed = try row.decode("token_key_id", as: String?.self).map {
                Keyring.Sealed(keyID: $0, box: try row.decode("token_box", as: [UInt8].self))
            }
            return (try SessionRow.session(from: row), sealed)
        }
    }
}
