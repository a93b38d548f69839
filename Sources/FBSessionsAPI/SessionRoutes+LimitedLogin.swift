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
}
