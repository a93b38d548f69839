import HTTPServer

/// Drives a ``RequestHandler`` without a socket, the way the server does: inspect the head, then respond, then
/// await the waiting work. Route-level tests use it; a smaller set goes through real sockets. Every response goes to
/// the secrets transcript when it is on (``SecretsTranscript``).
public enum RouteCaller {
    /// Sends one request and returns the response.
    public static func call(
        _ handler: some RequestHandler, _ method: String, _ target: String, headers: HTTPHeaders = [:],
        body: [UInt8] = []
    ) async -> Response {
        let (path, query) = split(target)
        var headers = headers
        if !body.isEmpty, !headers.contains("Content-Length") { headers.add("Content-Length", String(body.count)) }
        let head = RequestHead(method: method, path: path, rawQuery: query, headers: headers, requestID: "test-request")
        let response: Response
        switch handler.inspect(head) {
        case .reject(let rejection, _):
            response = rejection
        case .proceed(_, let respond):
            response = await respond(Request(head: head, body: body)).response()
        }
        SecretsTranscript.record(head, response)
        return response
    }

    private static func split(_ target: String) -> (String, String) {
        guard let mark = target.firstIndex(of: "?") else { return (target, "") }
        return (String(target[..<mark]), String(target[target.index(after: mark)...]))
    }
}

extension Response {
    /// The body as UTF-8 text.
    public var text: String { String(decoding: body, as: UTF8.self) }
}
