import Crypto
import FBSessionsCore
import Foundation
import Postgres

/// ``PictureStore`` over PostgreSQL (`picture_cache`, migration 0005), shared by every instance.
///
/// The lookup reads the session and its cached picture in one statement (a join on the session's Facebook user),
/// without the bytes unless asked: the bytes are TOASTed apart, so a 304 or an in-memory hit reads only a few
/// small columns. Fill leases are rows (or columns of the cached row) claimed with one `INSERT … ON CONFLICT DO
/// UPDATE … WHERE` statement, so exactly one caller wins whatever the number of instances.
///
/// A limited session's picture is cached under one key whatever size is asked (``PictureService/limitedSizeKey``,
/// the `CASE` in the lookups): it has only the one picture its token named.
///
/// With an ``ExactCache``, every lookup that finds a picture keeps its description (not the bytes) there, so that a
/// hit or a 304 can be answered from memory (by the fast path, ``ExactCache/picture(_:)``); migration 0009 announces every change to
/// `picture_cache`.
public struct PostgresPictureStore: PictureStore {
    private let database: Database
    private let cache: ExactCache?
    private let lookups: ReadBatcher<PictureRead, PictureLookup>

    /// Creates the store.
    /// - Parameters:
    ///   - database: The database.
    ///   - cache: The exact cache the lookups fill, if any.
    public init(database: Database, cache: ExactCache? = nil) {
        self.database = database
        self.cache = cache
        lookups = ReadBatcher(database: database, fetch: Self.fetchLookups)
    }

    public func lookup(sessionID: String, appID: String, sizeKey: String, includeBody: Bool, now: Date) async throws
        -> PictureLookup
    {
        let mark = cache?.mark()
        let found = try await read(sessionID: sessionID, appID: appID, sizeKey: sizeKey, includeBody: includeBody, now: now)
        if let cache, let mark, case .live(let facebookUserID, let picture?, _, let kind) = found {
            let key = PictureKey(
                appID: appID, facebookUserID: facebookUserID,
                sizeKey: kind == .limited ? PictureService.limitedSizeKey : sizeKey)
            cache.fill(picture, for: key, since: mark)
        }
        return found
    }

    private func read(sessionID: String, appID: String, sizeKey: String, includeBody: Bool, now: Date) async throws
        -> PictureLookup
    {
        if !includeBody {
            // The hot case (304, or bytes from memory): batched with other requests' lookups.
            return try await lookups.load(PictureRead(sessionID: sessionID, appID: appID, sizeKey: sizeKey, now: now))
        }
        return try await database.run { connection in
            let rows = try includeBody
                ? connection.query(
                    """
                    SELECT s.state, s.facebook_user_id, s.login_kind, \(unsafeSQL: Self.columns), p.body
                    FROM sessions s LEFT JOIN picture_cache p ON p.app_id = s.app_id
                        AND p.facebook_user_id = s.facebook_user_id
                        AND p.size_key = CASE WHEN s.login_kind = 'limited' THEN 'limited' ELSE \(sizeKey) END
                    WHERE s.id = \(sessionID) AND s.app_id = \(appID)
                    """)
                : connection.query(
                    """
                    SELECT s.state, s.facebook_user_id, s.login_kind, \(unsafeSQL: Self.columns)
                    FROM sessions s LEFT JOIN picture_cache p ON p.app_id = s.app_id
                        AND p.facebook_user_id = s.facebook_user_id
                        AND p.size_key = CASE WHEN s.login_kind = 'limited' THEN 'limited' ELSE \(sizeKey) END
                    WHERE s.id = \(sessionID) AND s.app_id = \(appID)
                    """)
            guard let row = rows.first else { return .notFound }
            guard try row.decode("state", as: String.self) != "closed" else { return .closed }
            let filling = try row.decode("filling_until", as: Date?.self).map { $0 > now } ?? false
            return .live(
                facebookUserID: try row.decode("facebook_user_id", as: String.self),
                cached: try Self.picture(from: row, includeBody: includeBody), filling: filling,
                loginKind: try Self.loginKind(row))
        }
    }

    public func body(_ key: PictureKey, etag: String) async throws -> [UInt8]? {
        try await database.run { connection in
            try connection.query(
                """
                SELECT body FROM picture_cache
                WHERE app_id = \(key.appID) AND facebook_user_id = \(key.facebookUserID) AND size_key = \(key.sizeKey)
                    AND etag = \(etag)
                """
            ).first?.decode("body", as: [UInt8]?.self)
        }
    }

    public func claimFill(_ key: PictureKey, now: Date, leaseUntil: Date) async throws -> String? {
        let token = Base64URL.encode(SecureRandom.bytes(12))
        return try await database.run { connection in
            try connection.query(
                """
                INSERT INTO picture_cache (app_id, facebook_user_id, size_key, fill_token, filling_until)
                VALUES (\(key.appID), \(key.facebookUserID), \(key.sizeKey), \(token), \(leaseUntil))
                ON CONFLICT (app_id, facebook_user_id, size_key) DO UPDATE
                    SET fill_token = excluded.fill_token, filling_until = excluded.filling_until
                    WHERE (picture_cache.filling_until IS NULL OR picture_cache.filling_until <= \(now))
                        AND (picture_cache.fresh_until IS NULL OR picture_cache.fresh_until <= \(now))
                RETURNING fill_token
                """
            ).first?.decode("fill_token", as: String.self)
        }
    }

    public func finishFill(
        _ key: PictureKey, token: String, picture: CachedPicture, body: [UInt8], purgeBefore: Date
    ) async throws -> Bool {
        try await database.transaction { connection in
            let stored = try connection.execute(
                """
                UPDATE picture_cache SET content_type = \(picture.type.rawValue), body = \(body),
                    etag = \(picture.etag), url = \(picture.url), width = \(picture.width),
                    height = \(picture.height), is_silhouette = \(picture.isSilhouette),
                    url_expires_at = \(picture.urlExpiresAt), fetched_at = \(picture.fetchedAt),
                    fresh_until = \(picture.freshUntil), fill_token = NULL, filling_until = NULL
                WHERE app_id = \(key.appID) AND facebook_user_id = \(key.facebookUserID)
                    AND size_key = \(key.sizeKey) AND fill_token = \(token)
                """)
            _ = try connection.execute(
                """
                DELETE FROM picture_cache
                WHERE app_id = \(key.appID) AND facebook_user_id = \(key.facebookUserID)
                    AND fresh_until < \(purgeBefore) AND fill_token IS NULL
                """)
            return stored > 0
        }
    }

    public func abandonFill(_ key: PictureKey, token: String) async throws {
        try await database.transaction { connection in
            _ = try connection.execute(
                """
                DELETE FROM picture_cache
                WHERE app_id = \(key.appID) AND facebook_user_id = \(key.facebookUserID)
                    AND size_key = \(key.sizeKey) AND fill_token = \(token) AND body IS NULL
                """)
            _ = try connection.execute(
                """
                UPDATE picture_cache SET fill_token = NULL, filling_until = NULL
                WHERE app_id = \(key.appID) AND facebook_user_id = \(key.facebookUserID)
                    AND size_key = \(key.sizeKey) AND fill_token = \(token)
                """)
        }
    }

    public func erase(appID: String, facebookUserID: String) async throws -> Int {
        try await database.run { connection in
            try connection.execute(
                "DELETE FROM picture_cache WHERE app_id = \(appID) AND facebook_user_id = \(facebookUserID)")
        }
    }

    // MARK: Rows

    /// The session's login kind in a lookup row.
    static func loginKind(_ row: PostgresRow) throws -> LoginKind {
        LoginKind(rawValue: try row.decode("login_kind", as: String.self)) ?? .standard
    }

    /// The cached-picture columns of `p`, without the bytes.
    static let columns: StaticString = """
        p.content_type, p.etag, p.url, p.width, p.height, p.is_silhouette, p.url_expires_at, p.fetched_at,
            p.fresh_until, p.filling_until
        """

    /// The cached picture of a lookup row, or nil when there is none (no row, or only a fill lease).
    static func picture(from row: PostgresRow, includeBody: Bool) throws -> CachedPicture? {
        guard let contentType = try row.decode("content_type", as: String?.self),
            let type = PictureImageType(contentType: contentType)
        else { return nil }
        return CachedPicture(
            type: type, etag: try row.decode("etag", as: String.self),
            body: includeBody ? try row.decode("body", as: [UInt8]?.self) : nil,
            url: try row.decode("url", as: String.self), width: try row.decode("width", as: Int?.self),
            height: try row.decode("height", as: Int?.self),
            isSilhouette: try row.decode("is_silhouette", as: Bool.self),
            urlExpiresAt: try row.decode("url_expires_at", as: Date?.self),
            fetchedAt: try row.decode("fetched_at", as: Date.self),
            freshUntil: try row.decode("fresh_until", as: Date.self))
    }
}
