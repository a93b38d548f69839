import FBSessionsCore
import HTTPServer
import Support

/// Facebook's deauthorize and data-deletion callbacks, and the public status of a deletion. None needs an API
/// key: Facebook authenticates with the `signed_request` (HMAC-SHA256 under the app secret). The callbacks take
/// `application/x-www-form-urlencoded`, as Facebook sends them, so they do not use the router's JSON check.
enum FacebookCallbackRoutes {
    /// Form bodies beyond this are 413; a `signed_request` beyond ``SignedRequest/maxLength`` is 400.
    static let maxFormBytes = 64 * 1024

    struct DeauthorizeDTO: Encodable {
        let sessionsClosed: Int
        enum CodingKeys: String, CodingKey { case sessionsClosed = "sessions_closed" }
    }

    struct DeletionRequestDTO: Encodable {
        let url: String
        let confirmationCode: String
        enum CodingKeys: String, CodingKey {
            case url
            case confirmationCode = "confirmation_code"
        }
    }

    struct DeletionStatusDTO: Encodable {
        let deletion: DataDeletion

        enum CodingKeys: String, CodingKey {
            case status, message
            case confirmationCode = "confirmation_code"
            case requestedAt = "requested_at"
            case completedAt = "completed_at"
        }

        var message: String {
            switch deletion.status {
            case .completed:
                "Everything this service held from Facebook about you for this app (access tokens, profile and "
                    + "cached pictures) has been deleted."
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(deletion.confirmationCode, forKey: .confirmationCode)
            try container.encode(deletion.status.rawValue, forKey: .status)
            try container.encode(RFC3339.string(from: deletion.requestedAt), forKey: .requestedAt)
            try container.encode(deletion.completedAt.map(RFC3339.string), forKey: .completedAt)
            try container.encode(message, forKey: .message)
        }
    }

    static func routes(_ services: Services) -> [Route] {
        let callbacks = services.facebookCallbacks
        let deauthorize: @Sendable (RouteContext) async throws -> Response = { context in
            let signedRequest = try signedRequest(in: context)
            let appID = try facebookAppID(in: context)
            guard let callbacks else { throw APIError.from(ServiceError.databaseUnavailable) }
            let closed = try await callbacks.deauthorize(signedRequest: signedRequest, facebookAppID: appID)
            return try JSONResponse.make(200, DeauthorizeDTO(sessionsClosed: closed.count))
        }
        let dataDeletion: @Sendable (RouteContext) async throws -> Response = { context in
            let signedRequest = try signedRequest(in: context)
            let appID = try facebookAppID(in: context)
            guard let callbacks else { throw APIError.from(ServiceError.databaseUnavailable) }
            let (deletion, url) = try await callbacks.requestDeletion(signedRequest: signedRequest, facebookAppID: appID)
            return try JSONResponse.make(
                200, DeletionRequestDTO(url: url, confirmationCode: deletion.confirmationCode),
                headers: ["Cache-Control": "no-store"])
        }
        return [
            /// - Remark: HTTP POST /v1/facebook/deauthorize (openapi.yaml operationId facebookDeauthorize)
            Route("POST", "/v1/facebook/deauthorize", operationID: "facebookDeauthorize", scope: nil, handler: .waiting(deauthorize)),
            /// - Remark: HTTP POST /v1/facebook/{facebook_app_id}/deauthorize (openapi.yaml operationId facebookAppDeauthorize)
            Route(
                "POST", "/v1/facebook/{facebook_app_id}/deauthorize", operationID: "facebookAppDeauthorize", scope: nil,
                handler: .waiting(deauthorize)),
            /// - Remark: HTTP POST /v1/facebook/data-deletion (openapi.yaml operationId facebookDataDeletion)
            Route("POST", "/v1/facebook/data-deletion", operationID: "facebookDataDeletion", scope: nil, handler: .waiting(dataDeletion)),
            /// - Remark: HTTP POST /v1/facebook/{facebook_app_id}/data-deletion (openapi.yaml operationId facebookAppDataDeletion)
            Route(
                "POST", "/v1/facebook/{facebook_app_id}/data-deletion", operationID: "facebookAppDataDeletion",
                scope: nil, handler: .waiting(dataDeletion)),
            /// - Remark: HTTP GET /v1/facebook/data-deletion/{confirmation_code} (openapi.yaml operationId getDataDeletion)
            Route(
                "GET", "/v1/facebook/data-deletion/{confirmation_code}", operationID: "getDataDeletion", scope: nil,
                handler: .waiting { context in
                    guard let callbacks else { throw APIError.from(ServiceError.databaseUnavailable) }
                    guard let deletion = try await callbacks.deletion(confirmationCode: context.parameters["confirmation_code"] ?? "")
                    else { throw APIError(404, .notFound, "No data-deletion request has this confirmation code.") }
                    let status = DeletionStatusDTO(deletion: deletion)
                    if prefersHTML(context.request.headers["Accept"]) {
                        return Response(
                            status: 200,
                            headers: ["Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store"],
                            body: Array(page(status).utf8))
                    }
                    return try JSONResponse.make(200, status, headers: ["Cache-Control": "no-store"])
                }),
        ]
    }

    /// The one `signed_request` field of an `application/x-www-form-urlencoded` body.
    static func signedRequest(in context: RouteContext) throws -> String {
        let mediaType = context.request.headers["Content-Type"]?.split(separator: ";").first?
            .trimmingCharacters(in: .whitespaces).lowercased()
        guard mediaType == "application/x-www-form-urlencoded" else {
            throw APIError(415, .unsupportedMediaType, "Send the body as application/x-www-form-urlencoded.")
        }
        guard context.request.body.count <= maxFormBytes else {
            throw APIError(413, .payloadTooLarge, "The form body is larger than \(maxFormBytes) bytes.")
        }
        guard let text = String(validating: context.request.body, as: UTF8.self), let form = QueryString.parse(text) else {
            throw APIError.invalid("The form body is not validly percent-encoded UTF-8.")
        }
        let values = form.filter { $0.name == "signed_request" }.map(\.value)
        guard values.count == 1, let value = values.first, !value.isEmpty else { throw SignedRequestError.missing }
        return value
    }

    /// The route's Facebook app id (digits), or nil on the app-less paths.
    static func facebookAppID(in context: RouteContext) throws -> String? {
        guard let id = context.parameters["facebook_app_id"] else { return nil }
        guard (1...32).contains(id.utf8.count), id.utf8.allSatisfy({ (48...57).contains($0) }) else {
            throw SignedRequestError.unknownApp
        }
        return id
    }

    static func prefersHTML(_ accept: String?) -> Bool {
        guard let accept = accept?.lowercased() else { return false }
        return accept.contains("text/html")
    }

    /// A human-readable status page (Facebook asks that the link explain the request's status to the person).
    static func page(_ status: DeletionStatusDTO) -> String {
        let completed = status.deletion.completedAt.map(RFC3339.string) ?? "pending"
        return """
            <!DOCTYPE html>
            <html><head><meta charset="utf-8"><title>Data deletion request</title></head><body>
            <h1>Data deletion request</h1>
            <p>Confirmation code: <code>\(status.deletion.confirmationCode)</code></p>
            <p>Status: \(status.deletion.status.rawValue) (\(completed))</p>
            <p>\(status.message)</p>
            </body></html>

            """
    }
}
