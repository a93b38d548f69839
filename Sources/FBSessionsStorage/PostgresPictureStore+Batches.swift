import FBSessionsCore
import Foundation
import Postgres

/// One picture lookup without the bytes (the hot case: a 304, or a hit in the memory cache).
struct PictureRead: Sendable {
    let sessionID: String
    let appID: String
    let sizeKey: String
    let now: Date
}

/// The batched picture lookups (``ReadBatcher``, docs/caching.md), like the batched status reads.
extension PostgresPictureStore {
    static func fetchLookups(_ connection: PostgresConnection, _ reads: [PictureRead]) throws
        -> [Result<PictureLookup, any Error>]
    {
        let rows = try connection.query(
            """
            SELECT r.i AS batch_index, s.state, s.facebook_user_id, s.login_kind, \(unsafeSQL: Self.columns)
            FROM unnest(\(reads.map(\.sessionID))::text[], \(reads.map(\.appID))::text[],
                \(reads.map(\.sizeKey))::text[]) WITH ORDINALITY AS r(session_id, app_id, size_key, i)
            LEFT JOIN sessions s ON s.id = r.session_id AND s.app_id = r.app_id
            LEFT JOIN picture_cache p ON p.app_id = s.app_id AND p.facebook_user_id = s.facebook_user_id
                AND p.size_key = CASE WHEN s.login_kind = 'limited' THEN 'limited' ELSE r.size_key END
            """)
        return BatchAnswers.byIndex(rows, count: reads.count) { index, row in
            let read = reads[index]
            guard let state = try row.decode("state", as: String?.self) else { return .notFound }
            guard state != "closed" else { return .closed }
            let filling = try row.decode("filling_until", as: Date?.self).map { $0 > read.now } ?? false
            return .live(
                facebookUserID: try row.decode("facebook_user_id", as: String.self),
                cached: try Self.picture(from: row, includeBody: false), filling: filling,
                loginKind: try Self.loginKind(row))
        }
    }
}
