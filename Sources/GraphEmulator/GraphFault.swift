/// A failure the emulator serves instead of the real answer, for the next N calls of an endpoint.
public enum GraphFault: Sendable, Equatable {
    /// A Graph error body with its status (see ``GraphErrorSpec``).
    case graphError(GraphErrorSpec)
    /// An HTTP status with Graph's transient error body (code 2, `is_transient: true`), e.g. 500 or 503.
    case httpStatus(Int)
    /// Status 200 with a JSON content type and a truncated, unparseable JSON body.
    case malformedBody
    /// Status 200 with a JSON content type and no body.
    case emptyBody
    /// Status 500 with an HTML error page instead of JSON.
    case htmlPage
    /// The connection is closed without a byte of response.
    case dropConnection
}

/// A Graph error chosen by a test. Unset parts take Graph's usual values for `code`.
public struct GraphErrorSpec: Sendable, Equatable {
    /// The error code, e.g. 190, 4, 17, 2.
    public var code: Int
    /// The subcode, or nil.
    public var subcode: Int?
    /// The `type`, e.g. `OAuthException`.
    public var type: String
    /// The message.
    public var message: String
    /// The HTTP status.
    public var status: Int
    /// The `is_transient` flag, or nil to leave it out.
    public var isTransient: Bool?

    /// Creates an error; missing parts default from `code` (message from Graph's catalog, status 500 for codes
    /// 1 and 2, 403 for 10 and 200–299, else 400).
    /// - Parameters:
    ///   - code: the error code.
    ///   - subcode: the subcode.
    ///   - type: the type; default `OAuthException`.
    ///   - message: the message; default the catalog's.
    ///   - status: the HTTP status; default by code.
    ///   - isTransient: the `is_transient` flag; default true for codes 1, 2, 4, 17, 341, else absent.
    public init(
        code: Int, subcode: Int? = nil, type: String = "OAuthException", message: String? = nil,
        status: Int? = nil, isTransient: Bool? = nil
    ) {
        self.code = code
        self.subcode = subcode
        self.type = type
        self.message = message ?? Self.defaultMessage(code: code, subcode: subcode)
        self.status = status ?? Self.defaultStatus(code: code)
        self.isTransient = isTransient ?? ([1, 2, 4, 17, 341].contains(code) ? true : nil)
    }

    static func defaultStatus(code: Int) -> Int {
        switch code {
        case 1, 2: return 500
        case 10, 200...299: return 403
        default: return 400
        }
    }

    static func defaultMessage(code: Int, subcode: Int?) -> String {
        switch code {
        case 1: return GraphError.unknown.message
        case 2: return GraphError.service.message
        case 4: return "(#4) Application request limit reached"
        case 17: return "(#17) User request limit reached"
        case 32: return "(#32) Page request limit reached"
        case 341: return "(#341) Application limit reached"
        case 368: return "(#368) The action attempted has been deemed abusive or is otherwise disallowed"
        case 613: return "(#613) Calls to this api have exceeded the rate limit."
        case 10: return "(#10) Application does not have permission for this action"
        case 200...299: return GraphError.permissionDenied.message
        case 102, 190:
            if let subcode, let reason = TokenInvalidation(rawValue: subcode) {
                let sample = TokenRecord(
                    string: "", appID: "0", userID: "0", kind: .user, issuedAt: 0, expiresAt: 0,
                    dataAccessExpiresAt: 0, isLongLived: false, granted: [], declined: [], expired: [])
                return GraphError.message(for: reason, token: sample, now: 0)
            }
            return "Invalid OAuth access token - Cannot parse access token"
        default: return "(#\(code)) An error occurred"
        }
    }

    var graphError: GraphError {
        let kind = [102, 190].contains(code) ? "invalid_token" : nil
        return GraphError(
            message, type: type, code: code, subcode: subcode, status: status, authenticateKind: kind,
            isTransient: isTransient)
    }

    /// Whether this is a throttling error, which carries `x-app-usage` at 100.
    var isThrottle: Bool { [4, 17, 32, 613].contains(code) }
}
