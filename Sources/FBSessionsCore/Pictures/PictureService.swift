import Crypto
import Foundation
import Support

/// Profile pictures through the service (`GET /v1/sessions/{id}/picture`): cached, conditional, single-flight,
/// safe, and served stale when Facebook is down.
///
/// - **Cache.** One row per (app, Facebook user, size) in the shared ``PictureStore``; a bounded
///   ``PictureMemoryCache`` in front keeps the bytes, but every request asks the store which ETag is current
///   (in the same query that checks the session), so an erased or replaced picture is never served by any
///   instance. A picture is fresh for `Policy.ttl`, never past its CDN URL's own expiry.
/// - **Conditional.** A fresh picture whose ETag the client sent in `If-None-Match` is a 304 without Graph,
///   the CDN or even the bytes.
/// - **Single flight.** Concurrent misses for one key make one Graph call and one CDN fetch: within the process
///   by ``SingleFlight``, across instances by the store's fill lease (others wait for its result).
/// - **Safety.** Graph's URL must pass ``PictureURLPolicy`` before anything is fetched; the fetcher holds
///   redirects, the size cap, the timeout and the magic-number check (and the type is checked again here).
/// - **Stale on error.** When Graph or the CDN is unavailable, a cached picture up to `Policy.maxStale` past its
///   freshness is served, marked stale (the API adds `Warning` and `Age`); with nothing cached the error stands.
/// - **Limited Login.** A limited session's picture is the one its token's `picture` claim names, fetched from that
///   URL through the same checks (no Graph call: Graph does not accept the token), cached under one key
///   (``limitedSizeKey``) whatever size is asked. That URL expires and cannot be renewed until the person logs in
///   again, so once it has, the cached copy is served for as long as the session lives (marked stale, with no
///   `maxStale` bound); with nothing cached the answer is ``PictureError/notCached(_:)`` (404
///   `picture_not_cached`).
public final class PictureService: Sendable {
    /// The cache key of a limited session's picture, whatever size is asked: its token names one picture.
    public static let limitedSizeKey = "limited"

    /// The knobs.
    public struct Policy: Sendable {
        /// Seconds a fetched picture is served without asking Graph again. Default 3600.
        public var ttl: Double
        /// Seconds past its freshness a picture may still be served while Graph or the CDN fails. Default 7 days.
        public var maxStale: Double
        /// Seconds kept clear of the CDN URL's own expiry. Default 60.
        public var urlExpiryMargin: Double
        /// The fetch limits (`FBS_PICTURE_MAX_BYTES`, timeout, redirects).
        public var limits: PictureFetchLimits
        /// Seconds one fill may hold the key before another instance may take over: the Graph call and the fetch,
        /// plus slack.
        public var fillLease: Double

        /// Creates a policy.
        /// - Parameters:
        ///   - ttl: freshness in seconds.
        ///   - maxStale: how long past freshness stale serving lasts.
        ///   - urlExpiryMargin: seconds kept clear of the URL's expiry.
        ///   - limits: fetch limits.
        ///   - graphTimeout: seconds per Graph call (`FBS_GRAPH_TIMEOUT`), for the fill lease.
        public init(
            ttl: Double = 3600, maxStale: Double = 7 * 86_400, urlExpiryMargin: Double = 60,
            limits: PictureFetchLimits = PictureFetchLimits(), graphTimeout: Double = 10
        ) {
            self.ttl = ttl
            self.maxStale = maxStale
            self.urlExpiryMargin = urlExpiryMargin
            self.limits = limits
            self.fillLease = graphTimeout + limits.timeout + 5
        }
    }

    let sessions: SessionService
    let store: any PictureStore
    let fetcher: any PictureFetching
    let urlPolicy: PictureURLPolicy
    let policy: Policy
    let memory: PictureMemoryCache?
    let flights = SingleFlight<PictureKey, CachedPicture>()
    let outcomes: OutcomeCounts?

    /// `fbs_picture_requests_total`'s series, one per outcome, resolved once: looking a series up by its labels
    /// builds their text and takes the counter's lock, on every picture request.
    struct OutcomeCounts: Sendable {
        /// The raw value is the series' place in ``series``: an array read, not a dictionary's hash, per request.
        enum Outcome: Int, CaseIterable {
            case hit, notModified, miss, stale, failed

            /// The `outcome` label.
            var label: String {
                switch self {
                case .hit: "hit"
                case .notModified: "not_modified"
                case .miss: "miss"
                case .stale: "stale"
                case .failed: "failed"
                }
            }
        }

        private let series: [CounterSeries]

        init(_ counter: Counter) {
            series = Outcome.allCases.map { counter.series([("outcome", $0.label)]) }
        }

        func count(_ outcome: Outcome) {
            series[outcome.rawValue].increment()
        }
    }

    /// Creates the service.
    /// - Parameters:
    ///   - sessions: the session service (its store, Graph client and app credentials are used).
    ///   - store: the shared cache.
    ///   - fetcher: the CDN fetcher.
    ///   - urlPolicy: which URLs may be fetched.
    ///   - policy: TTL, stale window, limits.
    ///   - memory: the in-memory layer, or nil for none.
    ///   - metrics: when given, registers `fbs_picture_requests_total{outcome}`.
    public init(
        sessions: SessionService, store: any PictureStore, fetcher: any PictureFetching, urlPolicy: PictureURLPolicy,
        policy: Policy = Policy(), memory: PictureMemoryCache? = PictureMemoryCache(), metrics: MetricsRegistry? = nil
    ) {
        self.sessions = sessions
        self.store = store
        self.fetcher = fetcher
        self.urlPolicy = urlPolicy
        self.policy = policy
        self.memory = memory
        self.outcomes = metrics.map {
            OutcomeCounts(
                $0.counter(
                    "fbs_picture_requests_total",
                    help: "Picture requests by outcome: hit, not_modified, miss, stale, failed."))
        }
    }

    /// A picture's bytes, or a 304 when `ifNoneMatch` names the current one.
    /// - Parameters:
    ///   - sessionID: the session.
    ///   - app: the caller's app.
    ///   - size: the size asked for.
    ///   - ifNoneMatch: the request's `If-None-Match`, if any.
    /// - Returns: the picture (with bytes unless `notModified`).
    /// - Throws: ``SessionError`` (unknown or closed), ``PictureError``, `GraphError`, ``ServiceError``.
    public func picture(sessionID: String, app: App, size: GraphPictureSize, ifNoneMatch: String?) async throws
        -> PictureReply
    {
        try await answer(sessionID: sessionID, app: app, size: size, ifNoneMatch: ifNoneMatch, needsBytes: true)
    }

    /// Graph's description of the picture (`redirect=false`): its CDN URL, size and silhouette flag. Shares the
    /// cache with ``picture(sessionID:app:size:ifNoneMatch:)``; a stale description is served only while its URL
    /// has not expired.
    public func description(sessionID: String, app: App, size: GraphPictureSize) async throws -> PictureReply {
        try await answer(sessionID: sessionID, app: app, size: size, ifNoneMatch: nil, needsBytes: false)
    }

    /// The answer from a picture's description already in memory (the fast path's, read with no I/O) when it is
    /// fresh: 304 when `ifNoneMatch` names its ETag, else 200 with the bytes from this service's memory when
    /// `needsBytes` (nil when memory does not hold them) or the description alone. Nil when it is not fresh; the
    /// caller then asks ``picture(sessionID:app:size:ifNoneMatch:)`` or ``description(sessionID:app:size:)``,
    /// whose answer is the same one read from the database. Counted like those.
    public func answer(
        from picture: CachedPicture, key: PictureKey, ifNoneMatch: String?, needsBytes: Bool, now: Date
    ) -> PictureReply? {
        guard picture.isFresh(at: now) else { return nil }
        if PictureETag.matches(ifNoneMatch, picture.etag) { return reply(picture, .notModified, now: now) }
        var found = picture
        if needsBytes {
            guard let body = memory?.body(key, etag: found.etag) else { return nil }
            found.body = body
        }
        return reply(found, .hit, now: now)
    }

    /// Counts a 304 answered from a memo of an earlier ``answer(from:key:ifNoneMatch:needsBytes:now:)`` (the
    /// picture and the `If-None-Match` the same, the picture still fresh).
    public func countNotModified() {
        outcomes?.count(.notModified)
    }

    /// The key a session's picture of `size` is cached under: a limited session has one picture whatever the size.
    public static func key(appID: String, facebookUserID: String, loginKind: LoginKind, size: GraphPictureSize)
        -> PictureKey
    {
        PictureKey(
            appID: appID, facebookUserID: facebookUserID, sizeKey: loginKind == .limited ? limitedSizeKey : size.cacheKey)
    }

    private func answer(
        sessionID: String, app: App, size: GraphPictureSize, ifNoneMatch: String?, needsBytes: Bool
    ) async throws -> PictureReply {
        let lookUp = { @Sendable in
            try await self.lookUp(
                sessionID: sessionID, app: app, size: size, ifNoneMatch: ifNoneMatch, needsBytes: needsBytes)
        }
        // An answer from memory (the fast path's) needs the session's cached entry too: read the session (through
        // the exact cache, which keeps it) beside the lookup, so that the next request for a picture of this session
        // is answered from memory even when no status request came first. This answer is the lookup's alone.
        async let warmed: Void = sessions.warm(sessionID, app: app)
        let reply = await capture(lookUp)
        await warmed
        return try reply.get()
    }

    private func lookUp(
        sessionID: String, app: App, size: GraphPictureSize, ifNoneMatch: String?, needsBytes: Bool
    ) async throws -> PictureReply {
        let lookup = try await store.lookup(
            sessionID: sessionID, appID: app.id, sizeKey: size.cacheKey,
            includeBody: needsBytes && memory == nil && ifNoneMatch == nil, now: Date())
        let userID: String
        var cached: CachedPicture?
        let limited: Bool
        switch lookup {
        case .notFound: throw SessionError.notFound
        case .closed: throw SessionError.closed
        case .live(let facebookUserID, let found, _, let kind):
            userID = facebookUserID
            cached = found
            limited = kind == .limited
        }
        let key = PictureKey(
            appID: app.id, facebookUserID: userID, sizeKey: limited ? Self.limitedSizeKey : size.cacheKey)
        let now = Date()
        if let found = cached, found.isFresh(at: now) {
            if PictureETag.matches(ifNoneMatch, found.etag) { return reply(found, .notModified, now: now) }
            if !needsBytes { return reply(found, .hit, now: now) }
            if let loaded = try await withBody(found, key: key) { return reply(loaded, .hit, now: now) }
            cached = nil  // replaced since the lookup: fetch the current one
        }
        do {
            let fresh = try await flights.run(key: key) {
                try await self.fillOrFollow(key, size: size, sessionID: sessionID, app: app)
            }
            let outcome: PictureReply.Outcome = PictureETag.matches(ifNoneMatch, fresh.etag) ? .notModified : .miss
            return reply(fresh, outcome, now: Date(), counted: .miss)
        } catch {
            let settled = await settle(error, sessionID: sessionID, app: app)
            // A limited session's copy is kept for its whole life: its URL cannot be renewed.
            guard Self.allowsStale(settled), let stale = cached,
                limited || now.timeIntervalSince(stale.freshUntil) < policy.maxStale,
                needsBytes || (stale.urlExpiresAt.map { $0 > now } ?? true)
            else {
                outcomes?.count(.failed)
                throw settled
            }
            if PictureETag.matches(ifNoneMatch, stale.etag) {
                return reply(stale, .notModified, now: now, stale: true, counted: .stale)
            }
            if !needsBytes { return reply(stale, .hit, now: now, stale: true, counted: .stale) }
            guard let loaded = try await withBody(stale, key: key) else { throw settled }
            return reply(loaded, .hit, now: now, stale: true, counted: .stale)
        }
    }

    /// The picture with its bytes: as loaded, from memory, or from the store (then kept in memory).
    func withBody(_ picture: CachedPicture, key: PictureKey) async throws -> CachedPicture? {
        var loaded = picture
        if loaded.body != nil { return loaded }
        if let body = memory?.body(key, etag: picture.etag) {
            loaded.body = body
            return loaded
        }
        guard let body = try await store.body(key, etag: picture.etag) else { return nil }
        memory?.store(key, etag: picture.etag, body: body)
        loaded.body = body
        return loaded
    }

    /// A 190-family answer to the picture call means the token died: validate the session now (which closes it
    /// with the right reason), and report it closed if it did.
    ///
    /// When that validation itself fails because the database does, the answer says so
    /// (``ServiceError/databaseUnavailable``) rather than the picture call's Graph error.
    private func settle(_ failure: any Error, sessionID: String, app: App) async -> any Error {
        guard case GraphError.invalidToken = failure else { return failure }
        do {
            if let (session, _) = try await sessions.status(sessionID, app: app, mode: .always),
                session.state == .closed
            {
                return SessionError.closed
            }
        } catch ServiceError.databaseUnavailable {
            return ServiceError.databaseUnavailable
        } catch {
            // Any other failure of the validation (Graph again): the picture call's own error stands.
        }
        return failure
    }

    /// Failures of Graph or the CDN that a cached picture may cover: transient, rate-limited, unavailable, and a
    /// limited session's picture URL that expired.
    static func allowsStale(_ error: any Error) -> Bool {
        switch error {
        case GraphError.transient, GraphError.rateLimited, PictureError.unavailable, PictureError.notCached:
            return true
        default: return false
        }
    }

    private func reply(
        _ picture: CachedPicture, _ outcome: PictureReply.Outcome, now: Date, stale: Bool = false,
        counted: OutcomeCounts.Outcome? = nil
    ) -> PictureReply {
        outcomes?.count(counted ?? (outcome == .notModified ? .notModified : .hit))
        return PictureReply(picture: picture, outcome: outcome, isStale: stale, now: now)
    }
}

/// What the API sends for a picture.
public struct PictureReply: Sendable {
    /// Whether the picture is sent or only confirmed.
    public enum Outcome: Sendable, Equatable {
        /// 200 with the bytes (or the description).
        case hit
        /// 200 with bytes fetched just now.
        case miss
        /// 304: the client's copy is current.
        case notModified
    }

    /// The picture; `body` is set unless `outcome` is `notModified` or it is a description.
    public var picture: CachedPicture
    /// How it is answered.
    public var outcome: Outcome
    /// Served past its freshness because Graph or the CDN failed (the API adds `Warning`).
    public var isStale: Bool
    /// The time of the answer.
    public var now: Date
    /// Seconds since the bytes were fetched (`Age`).
    public var age: Int { max(0, Int(now.timeIntervalSince(picture.fetchedAt))) }

    /// The freshness lifetime in seconds, counted from the fetch (`Cache-Control: max-age`, read with `Age`).
    public var maxAge: Int { max(0, Int(picture.freshUntil.timeIntervalSince(picture.fetchedAt))) }
}

/// Strong ETags of picture bytes and `If-None-Match` matching (RFC 9110 §8.8.3, §13.1.2).
public enum PictureETag {
    /// `"` + the first 128 bits of the bytes' SHA-256 in hex + `"`.
    public static func of(_ body: [UInt8]) -> String {
        "\"" + SHA256.hexDigest(body).prefix(32) + "\""
    }

    /// Whether an `If-None-Match` value names `etag`: `*`, or a listed tag equal under weak comparison.
    public static func matches(_ ifNoneMatch: String?, _ etag: String) -> Bool {
        guard var list = ifNoneMatch else { return false }
        var etag = etag
        // On the bytes in place: this runs on every conditional picture request (docs/performance.md, "Figures
        // behind the code").
        return etag.withUTF8 { tag in
            let wanted = unprefixed(tag[...])
            return list.withUTF8 { bytes in
                var start = 0
                while start <= bytes.count {
                    var end = start
                    while end < bytes.count, bytes[end] != UInt8(ascii: ",") { end += 1 }
                    let item = unprefixed(trimmed(bytes[start..<end]))
                    if (item.count == 1 && item.first == UInt8(ascii: "*")) || item.elementsEqual(wanted) { return true }
                    start = end + 1
                }
                return false
            }
        }
    }

    private typealias Bytes = Slice<UnsafeBufferPointer<UInt8>>

    /// A tag without its weak prefix `W/`.
    private static func unprefixed(_ tag: Bytes) -> Bytes {
        tag.count >= 2 && tag[tag.startIndex] == UInt8(ascii: "W") && tag[tag.startIndex + 1] == UInt8(ascii: "/")
            ? tag.dropFirst(2) : tag
    }

    /// An item of the list without the optional whitespace (space, tab) around it.
    private static func trimmed(_ item: Bytes) -> Bytes {
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = item.firstIndex(where: { !isSpace($0) }), let last = item.lastIndex(where: { !isSpace($0) })
        else { return item[item.endIndex...] }
        return item[first...last]
    }
}
