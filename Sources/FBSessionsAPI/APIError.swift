import FBSessionsCore
import HTTPServer
import Support

/// An error as the client sees it: status, code, message, and optional extra fields (e.g. the field at fault).
public struct APIError: Error, Sendable {
    /// HTTP status.
    public let status: Int
    /// The code from the closed list.
    public let code: ErrorCode
    /// Human text; never contains a token, secret or internal detail.
    public let message: String
    /// Extra members of the error object, e.g. `"field": "owner"`.
    public var extra: [String: String] = [:]
    /// Extra response headers, e.g. `Retry-After`.
    public var headers: HTTPHeaders = [:]

    /// Creates an error.
    public init(_ status: Int, _ code: ErrorCode, _ message: String, extra: [String: String] = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.extra = extra
    }

    /// 400 `invalid_request` naming the field at fault.
    public static func invalid(_ message: String, field: String? = nil) -> APIError {
        APIError(400, .invalidRequest, message, extra: field.map { ["field": $0] } ?? [:])
    }

    /// The response in the contract's shape, with the request id.
    public func response(requestID: String) -> Response {
        var json = #"{"error":{"code":""# + code.rawValue + #"","message":"# + JSONText.quoted(message)
        for key in extra.keys.sorted() {
            json += "," + JSONText.quoted(key) + ":" + JSONText.quoted(extra[key] ?? "")
        }
        json += #","request_id":"# + JSONText.quoted(requestID) + "}}"
        var response = Response.json(status: status, body: Array(json.utf8))
        for field in headers { response.headers.add(field.name, field.value) }
        return response
    }

    /// The one mapping from any error to what the client sees. Anything not known here is a 500 that reveals
    /// nothing but the request id.
    public static func from(_ error: any Error) -> APIError {
        switch error {
        case let error as APIError:
            return error
        case ServiceError.databaseUnavailable:
            var mapped = APIError(503, .databaseUnavailable, "The database is unavailable; try again shortly.")
            mapped.headers.add("Retry-After", "1")
            return mapped
        default:
            return APIError(500, .internalError, "Something went wrong; quote the request id when reporting it.")
        }
    }
}
