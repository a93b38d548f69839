import FBSessionsCore
import HTTPServer
import RateLimiting
import Tracing

/// A step between the router and a route's handler: it sees the request's context before the handler and the
/// response (or error) after it, and calls `next` to go on, or answers (or throws) itself to stop.
///
/// The router composes the chain once per route, in the order given, so that the first middleware is the
/// outermost. Rate limits and traces join here. Routes that answer at once with no scope (health, metrics, the
/// spec) run without the chain; every exchange, whatever answered it, is still logged and counted by the
/// ``Observer``.
public protocol Middleware: Sendable {
    /// Handles a request on its way to the route's handler.
    func handle(_ context: RouteContext, next: (RouteContext) async throws -> Response) async throws -> Response
}

/// The key check: for a route with a scope, the presented key's app and scopes (from the key cache when it
/// holds them), its liveness confirmed (docs/caching.md, "API keys"). Sets the context's principal, which
/// ``ScopeCheck``, last in the chain, holds against the route's scope.
///
/// - 401 `unauthorized` for a missing, unknown, revoked or wrong key (a key found revoked is forgotten).
public struct KeyCheck: Middleware {
    let keys: any KeyStore

    /// A key check over a key store.
    public init(keys: any KeyStore) {
        self.keys = keys
    }

    public func handle(_ context: RouteContext, next: (RouteContext) async throws -> Response) async throws -> Response {
        guard context.route.scope != nil else { return try await next(context) }
        let generation = keys.generation
        guard let presented = context.presentedKey, let found = try await keys.lookup(presented) else {
            throw APIError.unauthorized
        }
        context.span?.set("fbs.key_id", found.principal.key.id)
        var caller = found.principal
        // App and scopes from the cache; liveness from the database or the exact cache, which a revocation
        // committed anywhere empties first.
        if !found.isConfirmed {
            if try await !keys.isLive(keyID: caller.key.id) {
                keys.forget(keyID: caller.key.id)
                throw APIError.unauthorized
            }
            // The cache changed while the key was confirmed: the entry read may be one an announced change (a new
            // rate limit) dropped since. Read again, so that the request sees what committed before it arrived.
            if keys.generation != generation {
                guard let again = try await keys.lookup(presented) else { throw APIError.unauthorized }
                caller = again.principal
            }
        }
        var context = context
        context.principal = caller
        context.span?.set("fbs.key_id", caller.key.id)
        return try await next(context)
    }
}

/// The rate limit of the caller's key (``RateLimiter``), after ``KeyCheck``: a key without a limit goes on at the
/// cost of a nil check; a limited key's request takes a token, or is refused with 429 `rate_limited` and
/// `Retry-After`. Every answer to a limited key, the handler's or an error, carries `RateLimit-Policy` and
/// `RateLimit` (docs/api-contract.md, "Rate limits").
///
/// What ``KeyCheck`` refuses (401: no key it knows) never reaches it; a key without the route's scope does, and
/// its 403 (``ScopeCheck``, after this) counts and carries the fields like any answer to a limited key.
public struct RateLimitCheck: Middleware {
    let limiter: RateLimiter

    /// The check over the process's one limiter.
    public init(_ limiter: RateLimiter) {
        self.limiter = limiter
    }

    public func handle(_ context: RouteContext, next: (RouteContext) async throws -> Response) async throws -> Response {
        guard let caller = context.principal, let verdict = limiter.admit(caller) else { return try await next(context) }
        guard verdict.allowed else { throw verdict.refusal }
        do {
            var response = try await next(context)
            verdict.addFields(to: &response.headers)
            return response
        } catch {
            var headers = HTTPHeaders()
            verdict.addFields(to: &headers)
            throw FailureWithHeaders(error: error, headers: headers)
        }
    }
}

/// An error thrown through a middleware that wants its fields on the answer, whatever the error becomes
/// (``Router`` adds them to the response it makes of `error`).
struct FailureWithHeaders: Error {
    let error: any Error
    let headers: HTTPHeaders
}

/// The scope check, last before the handler: 403 `forbidden` for a key (``KeyCheck`` set the principal) that lacks
/// the route's scope. Last, so that the middleware between them (the rate limit) sees every request of a known key.
public struct ScopeCheck: Middleware {
    /// The check.
    public init() {}

    public func handle(_ context: RouteContext, next: (RouteContext) async throws -> Response) async throws -> Response {
        if let scope = context.route.scope, context.principal?.allows(scope) != true {
            throw APIError(403, .forbidden, "This API key lacks the \(scope.rawValue) scope.")
        }
        return try await next(context)
    }
}
