import FBSessionsCore
import Foundation
import HTTPServer

/// One operation of `openapi.yaml`: method, path template, the scope it needs, and its handler.
///
/// A class of constants: the router hands the matched route to the request's work and context, and as a class
/// that is one retain instead of a copy of its seven fields.
public final class Route: Sendable {
    /// How the handler runs.
    public enum Body: Sendable {
        /// Answers at once on the server thread: no I/O, no waiting (health, metrics, the spec).
        case immediate(@Sendable (RouteContext) -> Response)
        /// Waits on I/O; runs on a task while the connection is suspended.
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
    public let body: Body
    /// The answer from the exact cache alone, with no I/O, once a fence covered the request (``FencePass``), given
    /// where ``cacheHint`` found the entry before the fence; nil from it, or no such handler, runs ``body``. Only for
    /// keyed routes: the router confirms the key under the same pass first.
    public let cached: (@Sendable (RouteContext, FencePass, CacheHint) throws -> Response?)?
    /// Where the exact cache holds what ``cached`` needs, asked before the fence (a hint with no I/O and no fence):
    /// nil sends the request straight to ``body``, so that a request bound to miss does not first wait for a fence
    /// and then suspend again for its task. Without it every request waits for the fence, with
    /// ``CacheHint/unknown``.
    public let cacheHint: (@Sendable (RouteContext) -> CacheHint?)?

    /// Creates a route.
    public init(
        _ method: String, _ path: String, operationID: String, scope: Scope?, acceptsJSON: Bool = false,
        cached: (@Sendable (RouteContext, FencePass, CacheHint) throws -> Response?)? = nil,
        cacheHint: (@Sendable (RouteContext) -> CacheHint?)? = nil, body: Body
    ) {
        self.method = method
        self.path = PathTemplate(path)
        self.operationID = operationID
        self.scope = scope
        self.acceptsJSON = acceptsJSON
        self.body = body
        self.cached = cached
        self.cacheHint = cacheHint
    }
}

/// What a handler gets: the request, the path parameters, the query, and the authenticated caller.
public struct RouteContext: Sendable {
    /// The request.
    public let request: Request
    /// Decoded path parameters by name.
    public let parameters: PathParameters
    /// Decoded query pairs in order.
    public let query: [(name: String, value: String)]
    /// The caller, for routes with a scope.
    public let principal: Principal?

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
