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
    /// Extra integer members of the error object, e.g. `"slot": 2` for `already_linked`.
    public var integers: [String: Int] = [:]
    /// Extra response headers, e.g. `Retry-After`.
    public var headers: HTTPHeaders = [:]
    /// What Graph said, for errors caused by a Graph answer (`"graph": {code, subcode, type, fbtrace_id}`).
    public var graph: GraphErrorDetail?

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
        var fields: [(name: String, json: String)] = extra.keys.sorted().map { ($0, JSONText.quoted(extra[$0] ?? "")) }
        fields += integers.keys.sorted().map { ($0, String(integers[$0] ?? 0)) }
        if let graph {
            var object = #"{"code":"# + String(graph.code)
            object += #","subcode":"# + (graph.subcode.map(String.init) ?? "null")
            object += #","type":"# + (graph.type.map(JSONText.quoted) ?? "null")
            object += #","fbtrace_id":"# + (graph.fbtraceID.map(JSONText.quoted) ?? "null") + "}"
            fields.append(("graph", object))
        }
        var response = Response.error(
            status: status, code: code.rawValue, message: message, fields: fields, requestID: requestID)
        for field in headers { response.headers.add(field.name, field.value) }
        return response
    }

    /// 401 `unauthorized` with `WWW-Authenticate: Bearer`: no key, an unknown or wrong key, or a revoked one.
    static var unauthorized: APIError {
        var error = APIError(401, .unauthorized, "Send a valid API key as Authorization: Bearer <key>.")
        error.headers.add("WWW-Authenticate", "Bearer")
        return error
    }

    /// The one mapping from any error to what the client sees. Anything not known here is a 500 that reveals
    /// nothing but the request id.
    public static func from(_ error: any Error) -> APIError {
        switch error {
        case let error as APIError:
            return error
        case ServiceError.keyRevoked:
            return .unauthorized
        case ServiceError.databaseUnavailable:
            var mapped = APIError(503, .databaseUnavailable, "The database is unavailable; try again shortly.")
            mapped.headers.add("Retry-After", "1")
            return mapped
        case let error as SessionError:
            switch error {
            case .notFound: return APIError(404, .sessionNotFound, "No such session.")
            case .closed: return APIError(410, .sessionClosed, "The session is closed; log in again.")
            case .slotsFull(let count):
                return APIError(409, .slotsFull, "All \(count) slots of this owner hold other Facebook accounts.")
            case .noGraphToken:
                return APIError(
                    409, .noGraphToken,
                    "This session logged in with Limited Login; it holds no access token that Graph accepts.")
            case .notLimited:
                return APIError(
                    409, .notLimited, "This session did not log in with Limited Login; it has no authentication_token to refresh.")
            }
        case LoginError.tokenForAnotherApp:
            return APIError(422, .tokenAppMismatch, "The access token was issued for another Facebook app.")
        case LoginError.notAUserToken(let type, let graph):
            // `token_type` is debug_token's word for the token (left out when Graph gave none); never the token.
            let shown = type.flatMap { text in
                text.utf8.count <= 32 && text.utf8.allSatisfy { (65...90).contains($0) || $0 == 95 } ? text : nil
            }
            var mapped = APIError(
                422, .unsupportedTokenType,
                "The access token is not a person's user token (debug_token type \(shown ?? "missing")); this service "
                    + "keeps only user access tokens, not those of system users, Pages or apps.",
                extra: shown.map { ["token_type": $0] } ?? [:])
            mapped.graph = graph
            return mapped
        case LoginError.userMismatch:
            return APIError(422, .tokenRejected, "Graph did not confirm which user the token belongs to.")
        case let error as GraphError:
            return graphError(error)
        case let error as LoginFlowError:
            return loginFlowError(error)
        case let error as SignedRequestError:
            return signedRequestError(error)
        case let error as PictureError:
            return pictureError(error)
        case let error as AuthenticationTokenError:
            return authenticationTokenError(error)
        case let error as LoginNonceError:
            return nonceError(error)
        case let error as SigningKeyError:
            return signingKeyError(error)
        default:
            return APIError(500, .internalError, "Something went wrong; quote the request id when reporting it.")
        }
    }

    /// 502 `picture_refused` (a safety rule; `reason` names it) or 503 `picture_unavailable` with `Retry-After`.
    private static func pictureError(_ error: PictureError) -> APIError {
        switch error {
        case .refused(let rule):
            return APIError(502, .pictureRefused, "The picture was refused: \(rule.explanation).", extra: ["reason": rule.rawValue])
        case .unavailable(let why):
            var mapped = APIError(
                503, .pictureUnavailable, "Facebook's picture CDN could not deliver the picture; try again shortly.",
                extra: ["reason": why.rawValue])
            mapped.headers.add("Retry-After", "5")
            return mapped
        case .notCached(let why):
            let message =
                why == .urlExpired
                ? "The picture URL of this Limited Login session has expired and no copy is cached; the next login brings a new one."
                : "The Limited Login token of this session named no picture."
            return APIError(404, .pictureNotCached, message, extra: ["reason": why.rawValue])
        }
    }

    private static func graphError(_ error: GraphError) -> APIError {
        var mapped: APIError
        switch error {
        case .invalidToken(let reason, _):
            mapped = APIError(422, .tokenRejected, "Facebook rejected the access token (\(reason.rawValue)).")
        case .dataAccessExpired:
            mapped = APIError(422, .tokenRejected, "Data access for this token has expired; log in with auth_type=reauthorize.")
        case .permissionMissing:
            mapped = APIError(422, .tokenRejected, "The token lacks a permission this call needs.")
        case .rateLimited:
            mapped = APIError(503, .graphUnavailable, "Facebook is rate-limiting this app; try again later.")
            mapped.headers.add("Retry-After", "60")
        case .transient:
            mapped = APIError(503, .graphUnavailable, "Facebook could not be reached; try again shortly.")
            mapped.headers.add("Retry-After", "5")
        case .other:
            mapped = APIError(502, .graphError, "Facebook answered with an unexpected error.")
        }
        if case .transient = error {} else { mapped.graph = error.detail }
        return mapped
    }
}
