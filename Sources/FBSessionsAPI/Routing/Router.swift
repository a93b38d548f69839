import FBSessionsCore
import Foundation
import HTTPServer
import Support
import Tracing

/// The API's ``RequestHandler``: finds the route, rejects early what needs no body read (404, 405, 415, 401 for a
/// missing key), then runs the route's middleware and handler and maps what they throw to the contract's errors.
/// Every exchange is logged and counted by the ``Observer``.
///
/// A request's way: ``inspect(_:)`` (the head) → ``respond(to:found:key:)`` (the whole request: the query) →
/// ``Endpoint/run`` (the middleware, then the handler) → ``failure(_:_:)`` for what they throw.
public final class Router: RequestHandler, Sendable {
    private let endpoints: [Endpoint]
    private let observer: Observer
    /// Makes the server spans; nil when tracing is off.
    public let tracer: Tracer?

    /// For every path that is some route's whole template (no parameters: `/healthz`, `/v1/sessions`), what
    /// ``find(_:)`` sees for exactly that path: every route matching it, in order, made once.
    private let literalPaths: [(path: String, matches: [Found])]

    /// The routes by the number of segments of their template, each list in the routes' order: a path is tried only
    /// against templates of its own length.
    private let endpointsBySegments: [Int: [Endpoint]]

    /// Creates a router over routes, each behind the ``KeyCheck`` of `keys`, then `middleware` (first is outermost;
    /// it sees the caller: ``RateLimitCheck`` goes here), then the ``ScopeCheck``. With a `tracer`, a
    /// ``TraceMiddleware`` goes first of all, so that every request of a route with a scope, 401s included, has a
    /// server span when sampled.
    public init(
        routes: [Route], keys: any KeyStore, observer: Observer, middleware: [any Middleware] = [], tracer: Tracer? = nil
    ) {
        var observer = observer
        var chain: [any Middleware] = [KeyCheck(keys: keys)] + middleware + [ScopeCheck()]
        if let tracer {
            let log = RequestTraceLog()
            observer.traceLog = log
            chain.insert(TraceMiddleware(tracer: tracer, log: log), at: 0)
        }
        self.tracer = tracer
        let endpoints = routes.map { Endpoint(route: $0, middleware: chain) }
        self.endpoints = endpoints
        self.observer = observer
        var literalPaths: [(path: String, matches: [Found])] = []
        for endpoint in endpoints where endpoint.route.path.isLiteral {
            let path = endpoint.route.path.description
            guard !literalPaths.contains(where: { $0.path == path }) else { continue }
            let matches = endpoints.compactMap { candidate -> Found? in
                guard case .matched(let parameters) = candidate.route.path.match(path) else { return nil }
                return Found(endpoint: candidate, parameters: parameters)
            }
            literalPaths.append((path, matches))
        }
        self.literalPaths = literalPaths
        endpointsBySegments = Dictionary(grouping: endpoints) { $0.route.path.segmentCount }
    }

    /// The (method, template) pairs served, for the spec conformance test.
    public var operations: [(method: String, path: String, operationID: String)] {
        endpoints.map { ($0.route.method, $0.route.path.description, $0.route.operationID) }
    }

    /// A route with its middleware composed around its handler, once.
    final class Endpoint: Sendable {
        let route: Route
        /// The middleware, then the handler.
        let run: @Sendable (RouteContext) async throws -> Response

        init(route: Route, middleware: [any Middleware]) {
            self.route = route
            let handler: @Sendable (RouteContext) async throws -> Response
            switch route.handler {
            case .immediate(let answer): handler = { answer($0) }
            case .waiting(let answer): handler = answer
            }
            run = middleware.reversed().reduce(handler) { next, step in
                { context in try await step.handle(context, next: next) }
            }
        }
    }

    /// Matches the route, and parses the bearer key, once: the responder it returns answers with what was matched.
    /// With tracing on, the request's sampling is decided here.
    public func inspect(_ head: RequestHead) -> HeadDecision {
        guard let tracer else { return inspect(head, trace: nil) }
        return inspect(head, trace: Router.decide(head, tracer))
    }

    /// The sampling decision of a request: its `traceparent` continued, else the sampler's for a new trace.
    public static func decide(_ head: RequestHead, _ tracer: Tracer) -> TraceDecision {
        tracer.decide(traceparent: head.headers["traceparent"], tracestate: head.headers["tracestate"])
    }

    /// ``inspect(_:)`` with the sampling decision already made (the service's handler makes it before the fast path
    /// sees the request, so that a sampled one comes here and is decided once).
    public func inspect(_ head: RequestHead, trace: TraceDecision?) -> HeadDecision {
        switch find(head) {
        case .failure(let failure):
            let response = failure.error.response(requestID: head.requestID)
            return .reject(traced(response, head, route: failure.route, trace), route: failure.route)
        case .success(let found):
            let route = found.endpoint.route
            if route.acceptsJSON, hasBody(head), !isJSON(head.headers["Content-Type"]) {
                let error = APIError(415, .unsupportedMediaType, "Send the body as application/json.")
                let response = traced(error.response(requestID: head.requestID), head, route: route.path.description, trace)
                return .reject(response, route: route.path.description)
            }
            let key = route.scope == nil ? nil : BearerCredential.key(in: head.headers["Authorization"])
            if route.scope != nil, key == nil {
                let response = APIError.unauthorized.response(requestID: head.requestID)
                return .reject(traced(response, head, route: route.path.description, trace), route: route.path.description)
            }
            return .proceed(route: route.path.description) { [self] request in
                respond(to: request, found: found, key: key, trace: trace)
            }
        }
    }

    /// The complete request, with the route ``inspect(_:)`` found and the key it parsed: the middleware and the
    /// handler on a task, or, for a route that answers at once and needs no key, the handler now.
    private func respond(to request: Request, found: Found, key: String?, trace: TraceDecision?) -> Reply {
        let template = found.endpoint.route.path.description
        guard let query = QueryString.parse(request.head.rawQuery) else {
            let error = APIError.invalid("The query string is not validly percent-encoded.")
            return .now(traced(error.response(requestID: request.requestID), request.head, route: template, trace))
        }
        let endpoint = found.endpoint
        var made = RouteContext(
            route: endpoint.route, request: request, parameters: found.parameters, query: query, presentedKey: key)
        made.trace = trace
        let context = made
        if case .immediate(let handler) = endpoint.route.handler, endpoint.route.scope == nil {
            return .now(traced(handler(context), request.head, route: template, trace))
        }
        return .later { [self] in
            do {
                return try await endpoint.run(context)
            } catch {
                return failure(error, context)
            }
        }
    }

    /// The server span of an answer made without the middleware chain (a rejection before the body, a query that is
    /// not validly encoded, a route that answers at once with no key), made and ended at once, with what
    /// ``TraceMiddleware`` records. An unmatched path's span is named by its method alone and carries no `url.path`:
    /// a path no route knows is the caller's text, kept out of spans.
    private func traced(_ response: Response, _ head: RequestHead, route: String?, _ trace: TraceDecision?) -> Response {
        guard let trace, let tracer, let span = tracer.serverSpan(route.map { head.method + " " + $0 } ?? head.method, decision: trace)
        else { return response }
        if let route {
            TraceMiddleware.describe(span, method: head.method, route: route, path: head.path, requestID: head.requestID)
        } else {
            span.set("http.request.method", head.method)
            span.set("fbs.request_id", head.requestID)
        }
        TraceMiddleware.finish(span, status: response.status)
        span.end()
        observer.traceLog?.remember(head.requestID, span)
        return response
    }

    /// The response for an error the middleware or the handler threw.
    private func failure(_ error: any Error, _ context: RouteContext) -> Response {
        if let failed = error as? FailureWithHeaders {
            var response = failure(failed.error, context)
            for field in failed.headers { response.headers.add(field.name, field.value) }
            return response
        }
        let requestID = context.requestID
        if error is CancellationError {
            // Its deadline passed (the client already got this same answer from the HTTP layer) or the server is
            // stopping. Nobody reads it, and it is no unexpected error.
            return .handlerTimedOut(requestID: requestID)
        }
        let mapped = APIError.from(error)
        if mapped.code == .internalError {
            observer.unexpected(error, requestID: requestID, route: context.route.path.description)
        } else if mapped.code == .databaseUnavailable {
            observer.countDatabaseUnavailable()
        }
        return mapped.response(requestID: requestID)
    }

    public func completed(_ record: ExchangeRecord) {
        observer.record(record)
    }

    // MARK: Matching

    /// A matched route and its decoded parameters. A class, so that keeping the literal paths' matches and handing
    /// one on costs a retain, not a copy.
    final class Found: Sendable {
        let endpoint: Endpoint
        let parameters: PathParameters

        init(endpoint: Endpoint, parameters: PathParameters) {
            self.endpoint = endpoint
            self.parameters = parameters
        }
    }

    private struct Failure: Error {
        let error: APIError
        let route: String?
    }

    /// The route for the request's method and path; else 404, 405 with `Allow`, or 400 for a parameter that is
    /// not validly percent-encoded.
    private func find(_ head: RequestHead) -> Result<Found, Failure> {
        let method = head.method == "HEAD" ? "GET" : head.method
        var allowed: [String] = []
        var matchedTemplate: String?
        // Compared as bytes (`==` on strings is canonical equivalence): the table holds what byte-equal paths match.
        if let literal = literalPaths.first(where: { $0.path.utf8.elementsEqual(head.path.utf8) }) {
            for found in literal.matches {
                if found.endpoint.route.method == method { return .success(found) }
                allowed.append(found.endpoint.route.method)
                matchedTemplate = found.endpoint.route.path.description
            }
        } else {
            for endpoint in endpointsBySegments[PathTemplate.segmentCount(of: head.path)] ?? [] {
                let route = endpoint.route
                switch route.path.match(head.path) {
                case .noMatch:
                    continue
                case .badEncoding:
                    return .failure(Failure(error: .invalid("The path is not validly percent-encoded."), route: route.path.description))
                case .matched(let parameters):
                    if route.method == method { return .success(Found(endpoint: endpoint, parameters: parameters)) }
                    allowed.append(route.method)
                    matchedTemplate = route.path.description
                }
            }
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
}
