import FBSessionsCore
import HTTPServer

extension SessionRoutes {
    /// `POST /v1/sessions` with `code` and `state` (the OAuth code flow); the body was decoded and the owner and
    /// slot range checked by the caller.
    /// - Returns: 201 for a new session, 200 when the owner's session for this Facebook user was updated.
    static func codeLogin(
        _ body: LoginRequest, owner: String, app: App, flow: LoginFlow?
    ) async throws -> Response {
        guard body.accessToken == nil else {
            throw APIError.invalid("Send either access_token, or code with state; not both.", field: "access_token")
        }
        guard let code = body.code else {
            throw APIError.invalid("code is required with state (from the login dialog's redirect).", field: "code")
        }
        guard let state = body.state else {
            throw APIError.invalid("state is required with code (from the login dialog's redirect).", field: "state")
        }
        guard (1...4096).contains(code.utf8.count), code.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
            throw APIError.invalid("code must be 1 to 4096 printable ASCII characters.", field: "code")
        }
        guard let flow else { throw APIError.from(ServiceError.databaseUnavailable) }
        let stored = try await flow.login(
            app: app,
            LoginFlow.CodeLogin(owner: owner, code: code, state: state, slot: body.slot, activate: body.activate))
        return .json(status: stored.created ? 201 : 200, body: SessionDTO(session: stored.session, validation: .fresh).jsonBytes)
    }
}
