import Support

/// A response to send: status, header fields and body bytes.
public struct Response: Sendable {
    /// The HTTP status code.
    public var status: Int
    /// Header fields; the server adds `X-Request-Id` (and MHD adds `Content-Length` and `Date`).
    public var headers: HTTPHeaders
    /// The body bytes.
    public var body: [UInt8]
    /// When true, nothing is sent: the connection is closed at once (test peers use this to play a server that
    /// drops the line).
    public var dropsConnection = false

    /// Creates a response.
    public init(status: Int, headers: HTTPHeaders = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// No answer at all: the connection is closed.
    public static var dropConnection: Response {
        var response = Response(status: 500)
        response.dropsConnection = true
        return response
    }

    /// A response with a JSON body that is already encoded.
    public static func json(status: Int, body: [UInt8], headers: HTTPHeaders = [:]) -> Response {
        var headers = headers
        headers.replace("Content-Type", with: "application/json")
        return Response(status: status, headers: headers, body: body)
    }

    /// An error in the contract's shape, `{"error": {"code": ..., "message": ...}}`, for errors the HTTP layer
    /// itself detects (413, 431, 500, 503). `code` must be snake_case ASCII; `message` is escaped here.
    public static func error(status: Int, code: String, message: String, requestID: String? = nil) -> Response {
        var json = #"{"error":{"code":""# + code + #"","message":"# + JSONText.quoted(message)
        if let requestID {
            json += #","request_id":"# + JSONText.quoted(requestID)
        }
        json += "}}"
        return .json(status: status, body: Array(json.utf8))
    }
}
