import FBSessionsAPI
import FBSessionsCore
import FBSessionsStorage
import Foundation
import HTTPServer
import RateLimiting

/// The answers the exact cache gives with no I/O, before the router: a status, an owner's list, a picture and its
/// description, when the cache holds everything the answer needs (docs/architecture.md, "The fast path").
///
/// For a request it can answer, ``inspect(_:)`` parks the request without a task until a fence of the exact cache
/// passed (docs/caching.md), then answers on the server's thread from what the cache holds, exactly as the
/// route would have from the database. Anything it cannot answer goes to the ``Router``, which answers every request
/// the usual way: a request it does not know, a key it has not seen, an entry the cache does not hold, a fence that
/// did not pass, a query it does not like (the router reports the error). It never answers an error itself, but for
/// the rate limiter's 429 to a limited key (``RateLimiter``, shared with the router).
///
/// A reader who skips this module still understands the service: every operation here is also a route, and a
/// server without an exact cache has no fast path at all.
public final class FastPath: Sendable {
    let cache: ExactCache
    let keys: CachedKeyStore
    let sessions: SessionService
    let pictures: PictureService?
    let router: Router
    let limiter: RateLimiter?
    let lists = RenderedBodies<ListKey, OwnerList>(limit: 256)
    /// Tells this fast path's per-thread memos from another's on the same thread (``LoopMemo``).
    let serial = LoopMemo.newOwner()

    /// A fast path over a cache and the services it shares with the routes.
    ///
    /// - Parameters:
    ///   - cache: The exact cache; it must be the one the stores fill, kept current by a listener.
    ///   - keys: The key cache the router's ``KeyCheck`` uses.
    ///   - sessions: The session service (its presentation rule).
    ///   - pictures: The picture service (its memory of bytes, its rule of freshness and its counts); nil answers
    ///     no picture.
    ///   - router: What answers everything else.
    ///   - limiter: The API keys' rate limits, the one the router's ``RateLimitCheck`` uses; nil limits nothing.
    public init(
        cache: ExactCache, keys: CachedKeyStore, sessions: SessionService, pictures: PictureService?, router: Router,
        limiter: RateLimiter? = nil
    ) {
        self.cache = cache
        self.keys = keys
        self.sessions = sessions
        self.pictures = pictures
        self.router = router
        self.limiter = limiter
    }

    /// The operations answered here, by path template.
    enum Operation: Sendable {
        case status(id: String)
        case list(owner: String)
        case picture(id: String)
        case pictureDescription(id: String)

        static let templates: [(PathTemplate, @Sendable (PathParameters) -> Operation?)] = [
            (PathTemplate("/v1/sessions/{id}"), { $0["id"].map { .status(id: $0) } }),
            (PathTemplate("/v1/owners/{owner}/sessions"), { $0["owner"].map { .list(owner: $0) } }),
            (PathTemplate("/v1/sessions/{id}/picture"), { $0["id"].map { .picture(id: $0) } }),
            (PathTemplate("/v1/sessions/{id}/picture/description"), { $0["id"].map { .pictureDescription(id: $0) } }),
        ]
    }

    /// What a request found before its fence: the operation, the caller and where the cache held the entry.
    final class Pending: Sendable {
        let operation: Operation
        let principal: Principal
        let hint: CacheHint

        init(operation: Operation, principal: Principal, hint: CacheHint) {
            self.operation = operation
            self.principal = principal
            self.hint = hint
        }
    }

    /// A decision for a request this fast path may answer: parked until a fence passed, then answered here or by
    /// the router; nil for every other request (the caller asks the router).
    public func inspect(_ head: RequestHead) -> HeadDecision? {
        guard head.method == "GET" || head.method == "HEAD", let (template, operation) = match(head.path),
            let key = BearerCredential.key(in: head.headers["Authorization"]),
            let principal = principal(key), principal.allows(.sessions),
            let hint = hint(operation, app: principal.app)
        else { return nil }
        let pending = Pending(operation: operation, principal: principal, hint: hint)
        return .proceed(route: template.description) { [self] request in
            .parked { wake in
                self.cache.wait { passed in wake { self.answer(request, pending, passed: passed) } }
            }
        }
    }

    private func match(_ path: String) -> (PathTemplate, Operation)? {
        // Every operation here is under one of two prefixes: any other request is declined with a comparison or two.
        guard path.utf8.starts(with: "/v1/sessions/".utf8) || path.utf8.starts(with: "/v1/owners/".utf8) else {
            return nil
        }
        let count = PathTemplate.segmentCount(of: path)
        for (template, operation) in Operation.templates where template.segmentCount == count {
            if case .matched(let parameters) = template.match(path), let found = operation(parameters) {
                return (template, found)
            }
        }
        return nil
    }

    /// The app and scopes of a presented key, from this thread's memo or the key cache; nil when not cached.
    private func principal(_ presented: String) -> Principal? {
        let memo = LoopMemo.onThisThread
        let generation = keys.generation
        if let known = memo.principal(for: presented, owner: serial, generation: generation) { return known }
        guard let (principal, expires) = keys.cached(presented) else { return nil }
        memo.remember(presented, principal, expires: expires, owner: serial, generation: generation)
        return principal
    }

    /// Where the cache holds what the operation needs; nil when it does not (then the router reads the database at
    /// once rather than wait for a fence first).
    private func hint(_ operation: Operation, app: App) -> CacheHint? {
        switch operation {
        case .status(let id), .picture(let id), .pictureDescription(let id):
            cache.sessionHint(id)
        case .list(let owner):
            cache.sessionsHint(owner: owner, appID: app.id)
        }
    }

    /// After the fence: the answer from the cache when it holds all of it and the key is known live, else the
    /// router's.
    ///
    /// A limited key's answer then passes the rate limiter, as the router's ``RateLimitCheck`` would have: only an
    /// answer made here counts (a request handed to the router is counted there, once), and a refused one is the
    /// limiter's 429, the one error answered here.
    private func answer(_ request: Request, _ pending: Pending, passed: Bool) -> Reply {
        guard passed, cache.isLiveKey(pending.principal.key.id), let query = QueryString.parse(request.head.rawQuery),
            var response = answer(pending, query: query, headers: request.headers)
        else { return routed(request) }
        if let limiter, let verdict = limiter.admit(pending.principal) {
            guard verdict.allowed else { return .now(verdict.refusal.response(requestID: request.requestID)) }
            verdict.addFields(to: &response.headers)
        }
        return .now(response)
    }

    private func answer(_ pending: Pending, query: [(name: String, value: String)], headers: HTTPHeaders) -> Response? {
        let app = pending.principal.app
        switch pending.operation {
        case .status(let id):
            guard let mode = try? Answers.validateMode(query) else { return nil }
            return status(id, app: app, mode: mode, hint: pending.hint)
        case .list(let owner):
            return list(owner, app: app, hint: pending.hint)
        case .picture(let id):
            guard let asked = try? Answers.pictureQuery(query, readsRedirect: true) else { return nil }
            let ifNoneMatch = asked.wantsBytes ? headers["If-None-Match"] : nil
            return picture(id, app: app, query: asked, ifNoneMatch: ifNoneMatch, hint: pending.hint)
        case .pictureDescription(let id):
            guard let asked = try? Answers.pictureQuery(query, readsRedirect: false) else { return nil }
            return picture(id, app: app, query: asked, ifNoneMatch: nil, hint: pending.hint)
        }
    }

    /// The router's answer to a request this fast path could not answer.
    private func routed(_ request: Request) -> Reply {
        switch router.inspect(request.head) {
        case .proceed(_, let respond): respond(request)
        case .reject(let response, _): .now(response)
        }
    }
}
