import Foundation

extension PictureService {
    /// Fills the cache for `key` under the store's lease, or waits for the instance holding it. At most a few
    /// rounds: a claim lost to another caller is followed; a followed fill that ends without a picture (it
    /// failed) lets this caller claim in turn.
    func fillOrFollow(_ key: PictureKey, size: GraphPictureSize, sessionID: String, app: App) async throws
        -> CachedPicture
    {
        let deadline = Date().addingTimeInterval(policy.fillLease)
        for _ in 0..<3 {
            let now = Date()
            if let token = try await store.claimFill(key, now: now, leaseUntil: now.addingTimeInterval(policy.fillLease)) {
                return try await fill(key, token: token, size: size, sessionID: sessionID, app: app)
            }
            if let picture = try await follow(key, sessionID: sessionID, app: app, until: deadline) {
                return picture
            }
        }
        throw PictureError.unavailable(.busy)
    }

    /// Asks Graph for the URL with the session's token, checks it, fetches it, and stores the result.
    private func fill(_ key: PictureKey, token: String, size: GraphPictureSize, sessionID: String, app: App)
        async throws -> CachedPicture
    {
        do {
            guard let (session, accessToken) = try await sessions.store.sessionWithToken(id: sessionID, appID: app.id)
            else {
                throw SessionError.notFound
            }
            let described: GraphPicture
            if session.loginKind == .limited {
                described = try Self.claimedPicture(session)
            } else {
                let credentials = try await sessions.credentials.credentials(for: app)
                described = try await sessions.graph.pictureURL(
                    size: size, accessToken: accessToken, credentials: credentials)
            }
            let url = try urlPolicy.check(described.url)
            if session.loginKind == .limited, let expiry = url.expiresAt, expiry <= Date() {
                throw PictureError.notCached(.urlExpired)  // the CDN would refuse it; nothing to fetch
            }
            let download = try await fetcher.fetch(url, policy: urlPolicy, limits: policy.limits)
            guard download.body.count <= policy.limits.maxBytes else { throw PictureError.refused(.tooLarge) }
            guard download.type.matches(download.body) else { throw PictureError.refused(.notAnImage) }
            let now = Date()
            var freshUntil = now.addingTimeInterval(policy.ttl)
            if let expiry = url.expiresAt {
                freshUntil = max(now, min(freshUntil, expiry.addingTimeInterval(-policy.urlExpiryMargin)))
            }
            let picture = CachedPicture(
                type: download.type, etag: PictureETag.of(download.body), body: download.body, url: url.text,
                width: described.width, height: described.height, isSilhouette: described.isSilhouette,
                urlExpiresAt: url.expiresAt, fetchedAt: now, freshUntil: freshUntil)
            // A failure to store still serves this request; the next one fetches again.
            let kept = (try? await store.finishFill(
                key, token: token, picture: picture, body: download.body,
                purgeBefore: now.addingTimeInterval(-policy.maxStale))) ?? false
            if kept { memory?.store(key, etag: picture.etag, body: download.body) }
            return picture
        } catch {
            try? await store.abandonFill(key, token: token)
            throw error
        }
    }

    /// A limited session's picture: the URL of its token's `picture` claim, with the size its query names (Facebook's
    /// lookaside URLs carry `width` and `height`).
    /// - Throws: ``PictureError/notCached(_:)`` (`noPicture`) when the token had no `picture` claim.
    static func claimedPicture(_ session: Session) throws -> GraphPicture {
        guard let text = session.profile?.pictureURL, !text.isEmpty else { throw PictureError.notCached(.noPicture) }
        func dimension(_ name: String) -> Int? {
            guard let query = text.split(separator: "?", maxSplits: 1).dropFirst().first else { return nil }
            for pair in query.split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0] == name, let value = Int(parts[1]), (1...10_000).contains(value) {
                    return value
                }
            }
            return nil
        }
        return GraphPicture(url: text, width: dimension("width"), height: dimension("height"), isSilhouette: false)
    }

    /// Waits for another caller's fill of `key`: the fresh picture once it is stored, nil when the fill ended
    /// without one (this caller may claim then).
    /// - Throws: ``PictureError/unavailable(_:)`` (`busy`) past `deadline`; ``SessionError`` when the session
    ///   closed meanwhile.
    private func follow(_ key: PictureKey, sessionID: String, app: App, until deadline: Date) async throws
        -> CachedPicture?
    {
        while true {
            switch try await store.lookup(
                sessionID: sessionID, appID: app.id, sizeKey: key.sizeKey, includeBody: false, now: Date())
            {
            case .notFound: throw SessionError.notFound
            case .closed: throw SessionError.closed
            case .live(_, let cached, let filling, _):
                if let cached, cached.isFresh(at: Date()), let loaded = try await withBody(cached, key: key) {
                    return loaded
                }
                if !filling { return nil }
            }
            guard Date() < deadline else { throw PictureError.unavailable(.busy) }
            try await Task.sleep(nanoseconds: 25_000_000)
        }
    }
}
