import FBSessionsCore
import Foundation
import HTTPServer
import Tracing

/// One operation of `openapi.yaml`: method, path template, the scope it needs, and its one handler.
///
/// A class of constants: the router hands the matched route to the request's work and context, and as a class
/// that is one retain instead of a copy of its fields.
public final class Route: Sendable {
    /// How the handler runs.
    public enum Handler: Sendable {
        /// Answers at once on the server's thread: no I/O, no waiting (health, metrics, the spec). A route of this
        /// kind with no scope runs without a task and without the middleware.
        case immediate(@Sendable (RouteContext) -> Response)
        /// Waits on I/O; runs on a task, after the middleware, while the connection is suspended.
        case waiting(@Sendable (RouteContext) async throws -> Response)
    }

    /// The method, upper case.
    public let method: String
    /// The path template.
    public let path: PathTemplate
    /// `operationId` in `openapi.yaml`.
    public let operationID: String
    /// The scope a key needs, or nil for a route that needs no key.
    public let scope: Scope?
    /// Whether the route takes a JSON body (then other content types get 415).
    public let acceptsJSON: Bool
    /// The handler.
    public let handler: Handler

    /// Creates a route.
    public init(
        _ method: String, _ path: String, operationID: String, scope: Scope?, acceptsJSON: Bool = false,
        handler: Handler
    ) {
        self.method = method
        self.path = PathTemplate(path)
        self.operationID = operationID
        self.scope = scope
        self.acceptsJSON = acceptsJSON
        self.handler = handler
    }
}

/// What a handler gets: the request, the path parameters, the query, and the authenticated caller.
public struct RouteContext: Sendable {
    /// The route matched.
    public let route: Route
    /// The request.
    public let request: Request
    /// Decoded path parameters by name.
    public let parameters: PathParameters
    /// Decoded query pairs in order.
    public let query: [(name: String, value: String)]
    /// The caller, for routes with a scope (set by ``KeyCheck``).
    public internal(set) var principal: Principal?
    /// The bearer key presented, as the router parsed it: for ``KeyCheck`` alone.
    let presentedKey: String?
    /// The request's sampling decision, when tracing is on (``TraceMiddleware`` makes the server span of it).
    var trace: TraceDecision?
    /// The request's server span while it is served, when sampled: ``KeyCheck`` sets `fbs.key_id` on it.
    var span: Span?

    /// A context; the principal is set by ``KeyCheck``.
    init(route: Route, request: Request, parameters: PathParameters, query: [(name: String, value: String)], presentedKey: String?) {
        self.route = route
        self.request = request
        self.parameters = parameters
        self.query = query
        self.presentedKey = presentedKey
    }

    /// The request id.
    public var requestID: String { request.requestID }

    /// The last value of a query parameter.
    public func query(_ name: String) -> String? {
        query.last { $0.name == name }?.value
    }

    /// Decodes the JSON body.
    /// - Throws: ``APIError`` 400 `invalid_request` naming the field when the body is malformed, not UTF-8, or
    ///   has a wrong type or a missing field.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        guard !request.body.isEmpty else { throw APIError.invalid("The request needs a JSON body.") }
        do {
            return try JSONDecoder().decode(T.self, from: Data(request.body))
        } catch DecodingError.keyNotFound(let key, let context) {
            let path = (context.codingPath + [key]).map(\.stringValue).joined(separator: ".")
            throw APIError.invalid("The field \(path) is required.", field: path)
        } catch DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context) {
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw APIError.invalid("The field \(path) has the wrong type.", field: path)
        } catch let error as APIError {
            throw error
        } catch {
            throw APIError.invalid("The body is not valid JSON (UTF-8).")
        }
    }
}

/// Encoding responses.
public enum JSONResponse {
    /// A JSON response of an encodable value.
    public static func make(_ status: Int, _ value: some Encodable, headers: HTTPHeaders = [:]) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return .json(status: status, body: Array(try encoder.encode(value)), headers: headers)
    }
}
