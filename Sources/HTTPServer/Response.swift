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
        // Room for what a middleware adds (a limited key's two rate-limit fields) without growing twice.
        headers.reserveCapacity(headers.count + 3)
        headers.replace("Content-Type", with: "application/json")
        return Response(status: status, headers: headers, body: body)
    }

    /// An error in the contract's shape, `{"error": {"code": ..., "message": ..., ...fields, "request_id": ...}}`:
    /// the one place the envelope is written, for the errors the HTTP layer itself detects (413, 431, 500, 503)
    /// and for every API error (`APIError.response`). `code` must be snake_case ASCII; `message` is escaped here;
    /// each field's value is JSON already (a quoted string, a number, an object).
    public static func error(
        status: Int, code: String, message: String, fields: [(name: String, json: String)] = [],
        requestID: String? = nil
    ) -> Response {
        var json = #"{"error":{"code":""# + code + #"","message":"# + JSONText.quoted(message)
        for field in fields {
            json += "," + JSONText.quoted(field.name) + ":" + field.json
        }
        if let requestID {
            json += #","request_id":"# + JSONText.quoted(requestID)
        }
        json += "}}"
        return .json(status: status, body: Array(json.utf8))
    }

    /// 503 `timeout` with `Retry-After`: the handler did not answer within its deadline. The HTTP layer sends it
    /// when the deadline passes; a handler whose task was cancelled for it answers the same.
    public static func handlerTimedOut(requestID: String?) -> Response {
        var response = Response.error(
            status: 503, code: "timeout", message: "The request took too long; try again.", requestID: requestID)
        response.headers.add("Retry-After", "1")
        return response
    }
}
