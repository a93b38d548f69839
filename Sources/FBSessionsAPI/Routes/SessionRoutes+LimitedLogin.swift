import FBSessionsCore
import HTTPServer

extension SessionRoutes {
    /// `POST /v1/sessions` with `authentication_token` (Limited Login); the body was decoded and the owner and slot
    /// range checked by the caller. Any other credential beside it is 400: one login, one way.
    /// - Returns: 201 for a new session, 200 when the owner's session for this Facebook user was updated.
    static func limitedLogin(
        _ body: LoginRequest, owner: String, app: App, flow: LimitedLogin?
    ) async throws -> Response {
        guard let token = body.authenticationToken else {
            throw APIError.invalid("authentication_token is required.", field: "authentication_token")
        }
        if body.accessToken != nil || body.code != nil || body.state != nil {
            let field = body.accessToken != nil ? "access_token" : body.code != nil ? "code" : "state"
            throw APIError.invalid(
                "Send one of access_token, code with state, or authentication_token; not several.", field: field)
        }
        guard let flow else { throw APIError.from(ServiceError.databaseUnavailable) }
        let stored = try await flow.login(
            app: app, owner: owner, authenticationToken: token, slot: body.slot, activate: body.activate)
        return .json(
            status: stored.created ? 201 : 200, body: SessionDTO(session: stored.session, validation: .fresh).jsonBytes)
    }

    /// `PUT /v1/sessions/{id}/authentication-token`: a token the SDK refreshed by itself replaces a limited
    /// session's (``LimitedLogin/refresh(sessionID:app:authenticationToken:)``). First the session (404 for an
    /// impossible, unknown or another app's id), then the body (400), then the session's state (410 closed, 409
    /// standard), then the token (422 with its `reason`), then, in the write, `wrong_subject` and `not_newer`.
    /// - Remark: HTTP PUT /v1/sessions/{id}/authentication-token (openapi.yaml operationId refreshAuthenticationToken)
    /// - Returns: 200 with the session as status shows it.
    static func refreshAuthenticationToken(_ context: RouteContext, flow: LimitedLogin?) async throws -> Response {
        let app = try context.app()
        let id = try Validation.pathSessionID(context)
        guard let flow else { throw APIError.from(ServiceError.databaseUnavailable) }
        let named = try await flow.sessionToRefresh(id, app: app)
        let body = try context.decode(RefreshRequest.self)
        try LimitedLogin.checkRefreshable(named)
        let session = try await flow.refresh(sessionID: id, app: app, authenticationToken: body.authenticationToken)
        return .json(status: 200, body: SessionDTO(session: session, validation: .fresh).jsonBytes)
    }
}

/// The body of `PUT /v1/sessions/{id}/authentication-token`: `authentication_token`, a string, and nothing else
/// (unknown fields and wrong types are 400 `invalid_request` naming the field).
struct RefreshRequest: Decodable {
    let authenticationToken: String

    enum CodingKeys: String, CodingKey, CaseIterable {
        case authenticationToken = "authentication_token"
    }

    init(from decoder: any Decoder) throws {
        try AnyKey.rejectUnknownFields(in: decoder, known: CodingKeys.self)
        let fields = try decoder.container(keyedBy: CodingKeys.self)
        authenticationToken = try fields.decode(String.self, forKey: .authenticationToken)
    }
}
