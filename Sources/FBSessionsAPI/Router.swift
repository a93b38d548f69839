import FBSessionsCore
import Foundation
import HTTPServer
import Support

/// The API's ``RequestHandler``: matches routes, rejects early what needs no body read (404, 405, 415, 401 for
/// a missing key), authenticates keys, runs handlers, maps errors, and logs and counts every exchange.
public final class Router: RequestHandler, Sendable {
    private let routes: [Route]
    private let keys: any KeyStore
    private let observer: Observer

    /// For every path that is some route's whole template (no parameters: `/healthz`, `/v1/sessions`), what
    /// ``find(_:)`` sees for exactly that path: every route matching it, in order, made once. Such a request is
    /// matched by comparing its path with a few strings and allocates nothing.
    private let literalPaths: [(path: String, matches: [Found])]

    /// The routes by the number of segments of their template, each list in the routes' order: a path is tried only
    /// against templates of its own length (a template of another length never matches), not against all of them.
    private let routesBySegments: [Int: [Route]]

    /// Creates a router over routes.
    public init(routes: [Route], keys: any KeyStore, observer: Observer) {
        self.routes = routes
        self.keys = keys
        self.observer = observer
        var literalPaths: [(path: String, matches: [Found])] = []
        for route in routes where route.path.isLiteral && !literalPaths.contains(where: { $0.path == route.path.description }) {
            let path = route.path.description
            var matches: [Found] = []
            var ambiguous = false
            for candidate in routes {
                switch candidate.path.match(path) {
                case .noMatch: continue
                case .badEncoding: ambiguous = true
                case .matched(let parameters): matches.append(Found(route: candidate, parameters: parameters))
                }
            }
            if !ambiguous { literalPaths.append((path, matches)) }
        }
        self.literalPaths = literalPaths
        routesBySegments = Dictionary(grouping: routes) { $0.path.segments.count }
    }

    /// The (method, template) pairs served, for the spec conformance test.
    public var operations: [(method: String, path: String, operationID: String)] {
        routes.map { ($0.method, $0.path.description, $0.operationID) }
    }

    /// Matches the route, and parses the bearer token, once: the responder it returns answers with what was matched.
    public func inspect(_ head: RequestHead) -> HeadDecision {
        switch find(head) {
        case .failure(let failure):
            return .reject(failure.error.response(requestID: head.requestID), route: failure.route)
        case .success(let found):
            let route = found.route
            if route.acceptsJSON, hasBody(head), !isJSON(head.headers["Content-Type"]) {
                let error = APIError(415, .unsupportedMediaType, "Send the body as application/json.")
                return .reject(error.response(requestID: head.requestID), route: route.path.description)
            }
            let presented = route.scope == nil ? nil : bearer(head)
            if route.scope != nil, presented == nil {
                return .reject(APIError.unauthorized.response(requestID: head.requestID), route: route.path.description)
            }
            return .proceed(route: route.path.description) { [self] request in
                respond(to: request, found: found, bearer: presented)
            }
        }
    }

    /// The complete request, with the route ``inspect(_:)`` found and the bearer token it parsed.
    private func respond(to request: Request, found: Found, bearer: String?) -> Reply {
        let requestID = request.requestID
        guard let query = QueryString.parse(request.head.rawQuery) else {
            return .now(APIError.invalid("The query string is not validly percent-encoded.").response(requestID: requestID))
        }
        let route = found.route
        if case .immediate(let handler) = route.body, route.scope == nil {
            return .now(handler(RouteContext(request: request, parameters: found.parameters, query: query, principal: nil)))
        }
        let call = Call(request: request, found: found, query: query, presented: bearer)
        if let cached = route.cached, let fence = keys.fence, let presented = bearer,
            let principal = keys.cachedPrincipal(presented),
            let hint = cacheHint(route, call.context(principal))
        {
            let waiting = FencedCall(
                router: self, call: call, cached: cached, principal: principal, hint: hint, fence: fence)
            return .parked { waiting.park($0) }
        }
        return .later { [self] in await answer(call) }
    }

    /// A request parked until the exact cache's fence comes back, then answered from the cache: its parts in one
    /// object, so that each closure on its way holds one reference. Closures that each captured the parts copied
    /// them, with a retain of every reference they hold, three times per request.
    private final class FencedCall: Sendable {
        let router: Router
        let call: Call
        let cached: @Sendable (RouteContext, FencePass, CacheHint) throws -> Response?
        let principal: Principal
        let hint: CacheHint
        let fence: any RequestFence

        init(
            router: Router, call: Call, cached: @escaping @Sendable (RouteContext, FencePass, CacheHint) throws -> Response?,
            principal: Principal, hint: CacheHint, fence: any RequestFence
        ) {
            self.router = router
            self.call = call
            self.cached = cached
            self.principal = principal
            self.hint = hint
            self.fence = fence
        }

        func park(_ wake: Wake) {
            fence.wait { pass in wake { self.answer(pass) } }
        }

        private func answer(_ pass: FencePass?) -> Reply {
            router.answerFromCache(call, cached, principal: principal, pass: pass, hint: hint)
        }
    }

    /// Where the exact cache holds what the route's ``Route/cached`` needs, or nil when it does not: the request then
    /// reads the database at once rather than wait for a fence first.
    private func cacheHint(_ route: Route, _ context: RouteContext) -> CacheHint? {
        guard let hint = route.cacheHint else { return .unknown }
        return hint(context)
    }

    /// One request on its way through ``respond(to:found:bearer:)``.
    private struct Call: Sendable {
        let request: Request
        let found: Found
        let query: [(name: String, value: String)]
        let presented: String?

        var route: Route { found.route }

        func context(_ principal: Principal?) -> RouteContext {
            RouteContext(request: request, parameters: found.parameters, query: query, principal: principal)
        }
    }

    /// After the exact cache's fence came back for the request, on the server's thread: the key is confirmed and
    /// the route answered from the cache under the same pass, with no task. Whatever the cache cannot answer
    /// goes on as usual: the key not known live is confirmed the usual way, a miss runs the route's body (the key
    /// being confirmed already).
    private func answerFromCache(
        _ call: Call, _ cached: @Sendable (RouteContext, FencePass, CacheHint) throws -> Response?, principal: Principal,
        pass: FencePass?, hint: CacheHint
    ) -> Reply {
        guard let pass, let scope = call.route.scope, keys.knownLive(keyID: principal.key.id, pass: pass) else {
            return .later { [self] in await answer(call) }
        }
        guard principal.allows(scope) else { return .now(forbidden(scope).response(requestID: call.request.requestID)) }
        let context = call.context(principal)
        do {
            if let response = try cached(context, pass, hint) { return .now(response) }
        } catch {
            return .now(failure(error, call))
        }
        return .later { [self] in
            do {
                return try await Self.run(call.route, context)
            } catch {
                return failure(error, call)
            }
        }
    }

    /// The request the usual way, on a task: the key looked up and confirmed, then the route's body.
    private func answer(_ call: Call) async -> Response {
        do {
            var principal: Principal?
            if let scope = call.route.scope {
                guard let presented = call.presented, let found = try await keys.lookup(presented) else {
                    throw APIError.unauthorized
                }
                let caller = found.principal
                if !found.isConfirmed {
                    // App and scopes from the cache; liveness from the database or the exact cache, which a
                    // revocation committed anywhere empties first (docs/caching.md).
                    guard try await keys.isLive(keyID: caller.key.id) else { throw ServiceError.keyRevoked }
                }
                guard caller.allows(scope) else { throw forbidden(scope) }
                principal = caller
            }
            return try await Self.run(call.route, call.context(principal))
        } catch {
            return failure(error, call)
        }
    }

    private func forbidden(_ scope: Scope) -> APIError {
        APIError(403, .forbidden, "This API key lacks the \(scope.rawValue) scope.")
    }

    /// The response for an error a handler threw.
    private func failure(_ error: any Error, _ call: Call) -> Response {
        let requestID = call.request.requestID
        switch error {
        case ServiceError.keyRevoked:
            if let presented = call.presented, let id = APIKeyText.id(in: presented) { keys.forget(keyID: id) }
            return APIError.unauthorized.response(requestID: requestID)
        case is CancellationError:
            // Its deadline passed (the client already got this same answer from the HTTP layer) or the server is
            // stopping. Nobody reads it, and it is no unexpected error.
            return .handlerTimedOut(requestID: requestID)
        default:
            let mapped = APIError.from(error)
            if mapped.code == .internalError {
                observer.unexpected(error, requestID: requestID, route: call.route.path.description)
            }
            return mapped.response(requestID: requestID)
        }
    }

    private static func run(_ route: Route, _ context: RouteContext) async throws -> Response {
        switch route.body {
        case .immediate(let handler): return handler(context)
        case .waiting(let handler): return try await handler(context)
        }
    }

    public func completed(_ record: ExchangeRecord) {
        observer.record(record)
    }

    // MARK: Matching

    /// A matched route and its decoded parameters. A class, so that keeping the literal paths' matches and handing
    /// one through ``Match`` costs a retain, not a copy of the route.
    fileprivate final class Found: Sendable {
        let route: Route
        let parameters: PathParameters

        init(route: Route, parameters: PathParameters) {
            self.route = route
            self.parameters = parameters
        }
    }

    private struct Failure: Error {
        let error: APIError
        let route: String?
    }

    private func find(_ head: RequestHead) -> Result<Found, Failure> {
        var allowed: [String] = []
        var matchedTemplate: String?
        var matched: Found?
        let method = head.method == "HEAD" ? "GET" : head.method
        guard head.path.hasPrefix("/") else {
            return .failure(Failure(error: APIError(404, .notFound, "No such route."), route: nil))
        }
        // Compared as bytes (`==` on strings is canonical equivalence): the table holds what byte-equal paths match.
        let length = head.path.utf8.count
        if let literal = literalPaths.first(where: {
            $0.path.utf8.count == length && $0.path.utf8.elementsEqual(head.path.utf8)
        }) {
            for found in literal.matches {
                if found.route.method == method { return .success(found) }
                allowed.append(found.route.method)
                matchedTemplate = found.route.path.description
            }
        } else {
            var path = head.path
            let failure: Failure? = path.withUTF8 { bytes in
                let ascii = bytes.allSatisfy { $0 < 0x80 }
                let parts = ascii ? [] : PathTemplate.segments(of: head.path)
                // As the templates count them: the segments after the leading `/`, one more than the slashes after it.
                let count = ascii ? bytes.reduce(0) { $0 + ($1 == UInt8(ascii: "/") ? 1 : 0) } : parts.count
                for route in routesBySegments[count] ?? [] {
                    switch ascii ? route.path.match(ascii: bytes) : route.path.match(segments: parts) {
                    case .noMatch:
                        continue
                    case .badEncoding:
                        return Failure(error: .invalid("The path is not validly percent-encoded."), route: route.path.description)
                    case .matched(let parameters):
                        if route.method == method {
                            matched = Found(route: route, parameters: parameters)
                            return nil
                        }
                        allowed.append(route.method)
                        matchedTemplate = route.path.description
                    }
                }
                return nil
            }
            if let failure { return .failure(failure) }
            if let matched { return .success(matched) }
        }
        guard !allowed.isEmpty else {
            return .failure(Failure(error: APIError(404, .notFound, "No such route."), route: nil))
        }
        var error = APIError(405, .methodNotAllowed, "This path allows \(allowed.joined(separator: ", ")).")
        error.headers.add("Allow", allowed.joined(separator: ", "))
        return .failure(Failure(error: error, route: matchedTemplate))
    }

    private func hasBody(_ head: RequestHead) -> Bool {
        if let length = head.headers["Content-Length"] { return length != "0" }
        return head.headers["Transfer-Encoding"] != nil
    }

    private func isJSON(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let mediaType = contentType.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        return mediaType == "application/json"
    }

    private func bearer(_ head: RequestHead) -> String? {
        guard let value = head.headers["Authorization"] else { return nil }
        if let key = Self.asciiBearer(value) { return key.isEmpty ? nil : key }
        // Not plain ASCII: the general rule (case-insensitive scheme, Unicode white space trimmed).
        guard value.count > 7, value.prefix(7).lowercased() == "bearer " else { return nil }
        let key = value.dropFirst(7).trimmingCharacters(in: .whitespaces)
        return key.isEmpty ? nil : key
    }

    /// The same rule on UTF-8 bytes, for the ASCII headers every real client sends: `lowercased()` and
    /// `trimmingCharacters(in:)` went through `NSString` and cost 2% of a status request. Returns nil when the value
    /// is not all ASCII (then the general rule decides), "" when it is no bearer credential.
    private static func asciiBearer(_ value: String) -> String? {
        var value = value
        return value.withUTF8 { bytes -> String? in
            guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
            let scheme: StaticString = "bearer "
            let schemeLength = scheme.utf8CodeUnitCount
            guard bytes.count > schemeLength else { return "" }
            let schemeBytes = scheme.utf8Start
            for index in 0..<schemeLength
            where bytes[index] | (bytes[index] >= 0x41 && bytes[index] <= 0x5A ? 0x20 : 0) != schemeBytes[index] {
                return ""
            }
            var start = schemeLength
            var end = bytes.count
            while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
            while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        }
    }
}
