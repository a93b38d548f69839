import Foundation

/// The shared picture cache (the port; `FBSessionsStorage.PostgresPictureStore` keeps it in PostgreSQL, where
/// every instance sees it). Rows are keyed by ``PictureKey`` and erasable per (app, Facebook user).
///
/// Filling is coordinated across instances by a lease on the row: one caller claims it, fetches, and finishes
/// (or abandons) it; others see `filling` and wait for the result. Every time given is the caller's clock.
public protocol PictureStore: Sendable {
    /// The session's standing and, for a live session, the cached picture of that size (without bytes unless
    /// `includeBody`), in one round trip.
    /// - Parameters:
    ///   - sessionID: the session.
    ///   - appID: the caller's app (another app's session is not found).
    ///   - sizeKey: ``GraphPictureSize/cacheKey``.
    ///   - includeBody: whether to load the bytes too.
    ///   - now: the current time, to report an unexpired fill lease.
    func lookup(sessionID: String, appID: String, sizeKey: String, includeBody: Bool, now: Date) async throws
        -> PictureLookup

    /// The bytes of the cached picture, if its ETag is still `etag`.
    func body(_ key: PictureKey, etag: String) async throws -> [UInt8]?

    /// Claims the right to fill `key` until `leaseUntil`, unless another claim is unexpired or the cached picture
    /// is fresh at `now`.
    /// - Returns: the claim's token, or nil when not claimed.
    func claimFill(_ key: PictureKey, now: Date, leaseUntil: Date) async throws -> String?

    /// Stores a fetched picture under a claim and releases it; also drops this user's pictures that have been
    /// stale since before `purgeBefore`.
    /// - Returns: false when the claim was lost (its lease ended and another took it, or the user's pictures
    ///   were erased meanwhile); nothing is stored then.
    func finishFill(_ key: PictureKey, token: String, picture: CachedPicture, body: [UInt8], purgeBefore: Date)
        async throws -> Bool

    /// Releases a claim without storing anything.
    func abandonFill(_ key: PictureKey, token: String) async throws

    /// Erases every cached picture of one Facebook user of one app (logout, deauthorization, data deletion).
    /// - Returns: the number of rows removed.
    func erase(appID: String, facebookUserID: String) async throws -> Int
}

/// What ``PictureStore/lookup(sessionID:appID:sizeKey:includeBody:now:)`` found.
public enum PictureLookup: Sendable, Equatable {
    /// No such session for this app.
    case notFound
    /// The session is closed.
    case closed
    /// A live session; its Facebook user, the cached picture if any, whether a fill lease is unexpired, and how it
    /// logged in (a limited session's picture is cached under ``PictureService/limitedSizeKey`` whatever the size
    /// asked, and that is the picture returned).
    case live(facebookUserID: String, cached: CachedPicture?, filling: Bool, loginKind: LoginKind)
}

/// One cache row: app, Facebook user and size.
public struct PictureKey: Sendable, Hashable {
    /// The app.
    public var appID: String
    /// The Facebook user (app-scoped id).
    public var facebookUserID: String
    /// ``GraphPictureSize/cacheKey``.
    public var sizeKey: String

    /// Creates a key.
    public init(appID: String, facebookUserID: String, sizeKey: String) {
        self.appID = appID
        self.facebookUserID = facebookUserID
        self.sizeKey = sizeKey
    }
}

/// A cached picture: the bytes' metadata, Graph's description of it, and its freshness.
public struct CachedPicture: Sendable, Equatable {
    /// The image type, sent as `Content-Type`.
    public var type: PictureImageType
    /// The strong ETag (quoted), from the bytes' SHA-256.
    public var etag: String
    /// The bytes, when loaded.
    public var body: [UInt8]?
    /// The CDN URL Graph gave (expires at ``urlExpiresAt``).
    public var url: String
    /// Width Graph reported.
    public var width: Int?
    /// Height Graph reported.
    public var height: Int?
    /// Whether it is the default silhouette.
    public var isSilhouette: Bool
    /// The CDN URL's own expiry (`ext`/`oe`), if it names one.
    public var urlExpiresAt: Date?
    /// When the bytes were fetched.
    public var fetchedAt: Date
    /// Until when it is served without asking Graph: the TTL, but never past the URL's expiry.
    public var freshUntil: Date

    /// Creates a value.
    public init(
        type: PictureImageType, etag: String, body: [UInt8]?, url: String, width: Int?, height: Int?,
        isSilhouette: Bool, urlExpiresAt: Date?, fetchedAt: Date, freshUntil: Date
    ) {
        self.type = type
        self.etag = etag
        self.body = body
        self.url = url
        self.width = width
        self.height = height
        self.isSilhouette = isSilhouette
        self.urlExpiresAt = urlExpiresAt
        self.fetchedAt = fetchedAt
        self.freshUntil = freshUntil
    }

    /// Whether it may be served without asking Graph at `now`.
    public func isFresh(at now: Date) -> Bool { now < freshUntil }
}

extension GraphPictureSize {
    /// The size's part of a cache key: `default`, `type=large`, `w=100,h=100`, `type=square,w=64`.
    /// Built in one string, with no list of parts: every picture request computes it.
    public var cacheKey: String {
        guard kind != nil || width != nil || height != nil else { return "default" }
        var key = ""
        if let kind { key += "type=" + kind.rawValue }
        if let width {
            if !key.isEmpty { key += "," }
            key += "w=" + String(width)
        }
        if let height {
            if !key.isEmpty { key += "," }
            key += "h=" + String(height)
        }
        return key
    }
}
