import FBSessionsCore
import Foundation
import HTTPServer
import Support

/// The API's ``RequestHandler``: matches routes, rejects early what needs no body read (404, 405, 415, 401 for
/// a missing key), authenticates keys, runs handlers, maps errors, and logs and counts every exchange.
public struct Router: RequestHandler {
    private let routes: [Route]
    private let keys: any KeyStore
    private let observer: Observer

    /// Creates a router over routes.
    public init(routes: [Route], keys: any KeyStore, observer: Observer) {
        self.routes = routes
        self.keys = keys
        self.observer = observer
    }

    /// The (method, template) pairs served, for the spec conformance test.
    public var operations: [(method: String, path: String, operationID: String)] {
        routes.map { ($0.method, $0.path.description, $0.operationID) }
    }

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
            if route.scope != nil, bearer(head) == nil {
                return .reject(Self.unauthorized.response(requestID: head.requestID), route: route.path.description)
            }
            return .proceed(route: route.path.description)
        }
    }

    public func respond(to request: Request) -> Reply {
        let requestID = request.requestID
        guard case .success(let found) = find(request.head) else {
            return .now(APIError(404, .notFound, "No such route.").response(requestID: requestID))
        }
        guard let query = QueryString.parse(request.head.rawQuery) else {
            return .now(APIError.invalid("The query string is not validly percent-encoded.").response(requestID: requestID))
        }
        let route = found.route
        if case .immediate(let handler) = route.body, route.scope == nil {
            return .now(handler(RouteContext(request: request, parameters: found.parameters, query: query, principal: nil)))
        }
        let keys = self.keys
        let presented = bearer(request.head)
        return .later {
            do {
                var principal: Principal?
                if let scope = route.scope {
                    guard let presented, let caller = try await keys.authenticate(presented) else {
                        throw Self.unauthorized
                    }
                    guard caller.allows(scope) else {
                        throw APIError(403, .forbidden, "This API key lacks the \(scope.rawValue) scope.")
                    }
                    principal = caller
                }
                let context = RouteContext(request: request, parameters: found.parameters, query: query, principal: principal)
                switch route.body {
                case .immediate(let handler): return handler(context)
                case .waiting(let handler): return try await handler(context)
                }
            } catch {
                return APIError.from(error).response(requestID: requestID)
            }
        }
    }

    public func completed(_ record: ExchangeRecord) {
        observer.record(record)
    }

    // MARK: Matching

    private struct Found {
        let route: Route
        let parameters: [String: String]
    }

    private struct Failure: Error {
        let error: APIError
        let route: String?
    }

    private func find(_ head: RequestHead) -> Result<Found, Failure> {
        var allowed: [String] = []
        var matchedTemplate: String?
        let method = head.method == "HEAD" ? "GET" : head.method
        guard head.path.hasPrefix("/") else {
            return .failure(Failure(error: APIError(404, .notFound, "No such route."), route: nil))
        }
        let parts = PathTemplate.segments(of: head.path)
        for route in routes {
            switch route.path.match(segments: parts) {
            case .noMatch:
                continue
            case .badEncoding:
                return .failure(Failure(error: .invalid("The path is not validly percent-encoded."), route: route.path.description))
            case .matched(let parameters):
                if route.method == method { return .success(Found(route: route, parameters: parameters)) }
                allowed.append(route.method)
                matchedTemplate = route.path.description
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

    private func bearer(_ head: RequestHead) -> String? {
        guard let value = head.headers["Authorization"], value.count > 7,
            value.prefix(7).lowercased() == "bearer "
        else { return nil }
        let key = value.dropFirst(7).trimmingCharacters(in: .whitespaces)
        return key.isEmpty ? nil : key
    }

    private static var unauthorized: APIError {
        var error = APIError(401, .unauthorized, "Send a valid API key as Authorization: Bearer <key>.")
        error.headers.add("WWW-Authenticate", "Bearer")
        return error
    }
}
