import FBSessionsCore
import HTTPServer
import Support

/// Login, status, logout and the token reveal.
enum SessionRoutes {
    static func routes(_ services: Services) -> [Route] {
        let sessions = services.sessions
        let maxSlots = services.maxSlots
        let loginFlow = services.loginFlow
        let limitedFlow = services.limitedLogin
        return [
            /// - Remark: HTTP POST /v1/sessions (openapi.yaml operationId createSession)
            Route("POST", "/v1/sessions", operationID: "createSession", scope: .sessions, acceptsJSON: true, handler: .waiting { context in
                let app = try context.app()
                let body = try context.decode(LoginRequest.self)
                let owner = try Validation.owner(body.owner)
                if let slot = body.slot, !(0..<maxSlots).contains(slot) {
                    throw APIError.invalid("slot must be between 0 and \(maxSlots - 1).", field: "slot")
                }
                if body.authenticationToken != nil {
                    return try await limitedLogin(body, owner: owner, app: app, flow: limitedFlow)
                }
                if body.code != nil || body.state != nil {
                    return try await codeLogin(body, owner: owner, app: app, flow: loginFlow)
                }
                guard let token = body.accessToken else {
                    throw APIError.invalid("Send access_token, or code and state.", field: "access_token")
                }
                guard (1...4096).contains(token.utf8.count), token.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
                    throw APIError.invalid("access_token must be 1 to 4096 printable ASCII characters.", field: "access_token")
                }
                let stored = try await sessions.login(app: app, owner: owner, accessToken: token, slot: body.slot, activate: body.activate)
                return .json(status: stored.created ? 201 : 200, body: SessionDTO(session: stored.session, validation: .fresh).jsonBytes)
            }),
            /// - Remark: HTTP GET /v1/sessions/{id} (openapi.yaml operationId getSession)
            Route("GET", "/v1/sessions/{id}", operationID: "getSession", scope: .sessions, handler: .waiting { context in
                let app = try context.app()
                let id = try Validation.pathSessionID(context)
                let mode = try Answers.validateMode(context.query)
                guard let (session, validation) = try await sessions.status(id, app: app, mode: mode) else {
                    throw SessionError.notFound
                }
                return .json(status: 200, body: Answers.statusBody(session, validation: validation))
            }),
            /// - Remark: HTTP DELETE /v1/sessions/{id} (openapi.yaml operationId deleteSession)
            Route("DELETE", "/v1/sessions/{id}", operationID: "deleteSession", scope: .sessions, handler: .waiting { context in
                let app = try context.app()
                let id = try Validation.pathSessionID(context)
                let revoke = try context.flag("revoke")
                guard let (session, revocation) = try await sessions.logout(
                    id, app: app, revoke: revoke, stamp: try context.auditStamp())
                else {
                    throw SessionError.notFound
                }
                return .json(status: 200, body: SessionDTO(session: session, validation: .cached, revocation: revocation).jsonBytes)
            }),
            /// - Remark: HTTP PUT /v1/sessions/{id}/authentication-token (openapi.yaml operationId
            ///   refreshAuthenticationToken)
            Route(
                "PUT", "/v1/sessions/{id}/authentication-token", operationID: "refreshAuthenticationToken", scope: .sessions,
                acceptsJSON: true, handler: .waiting { context in try await refreshAuthenticationToken(context, flow: limitedFlow) }),
            /// - Remark: HTTP GET /v1/sessions/{id}/token (openapi.yaml operationId getSessionToken)
            Route("GET", "/v1/sessions/{id}/token", operationID: "getSessionToken", scope: .tokensRead, handler: .waiting { context in
                let app = try context.app()
                let id = try Validation.pathSessionID(context)
                guard let (session, token, proof) = try await sessions.token(id, app: app, stamp: try context.auditStamp()) else {
                    throw SessionError.notFound
                }
                let body = TokenDTO(
                    sessionID: session.id, accessToken: token, appsecretProof: proof,
                    expiresAt: session.tokenExpiresAt.map(RFC3339.string),
                    dataAccessExpiresAt: session.dataAccessExpiresAt.map(RFC3339.string))
                return try JSONResponse.make(200, body, headers: ["Cache-Control": "no-store"])
            }),
        ]
    }

    struct TokenDTO: Encodable {
        let sessionID: String
        let accessToken: String
        let appsecretProof: String
        let expiresAt: String?
        let dataAccessExpiresAt: String?

        enum CodingKeys: String, CodingKey {
            case sessionID = "session_id"
            case accessToken = "access_token"
            case appsecretProof = "appsecret_proof"
            case expiresAt = "expires_at"
            case dataAccessExpiresAt = "data_access_expires_at"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(sessionID, forKey: .sessionID)
            try container.encode(accessToken, forKey: .accessToken)
            try container.encode(appsecretProof, forKey: .appsecretProof)
            try container.encode(expiresAt, forKey: .expiresAt)
            try container.encode(dataAccessExpiresAt, forKey: .dataAccessExpiresAt)
        }
    }
}

/// An owner's accounts: the list, the active one, logging all out.
enum OwnerRoutes {
    struct ActivateRequest: Decodable {
        let sessionID: String
        enum CodingKeys: String, CodingKey { case sessionID = "session_id" }
    }

    /// An owner's list on the wire; written by ``jsonBytes``.
    struct ListDTO {
        let sessions: [SessionDTO]
        let activeSessionID: String?
    }

    private static func listResponse(_ list: OwnerList) -> Response {
        .json(status: 200, body: Answers.listBody(list))
    }

    static func routes(_ services: Services) -> [Route] {
        let sessions = services.sessions
        return [
            /// - Remark: HTTP GET /v1/owners/{owner}/sessions (openapi.yaml operationId listOwnerSessions)
            Route("GET", "/v1/owners/{owner}/sessions", operationID: "listOwnerSessions", scope: .sessions, handler: .waiting { context in
                let app = try context.app()
                let owner = try Validation.owner(context.parameters["owner"] ?? "")
                return listResponse(try await sessions.sessions(owner: owner, app: app))
            }),
            /// - Remark: HTTP PUT /v1/owners/{owner}/active (openapi.yaml operationId setActiveSession)
            Route("PUT", "/v1/owners/{owner}/active", operationID: "setActiveSession", scope: .sessions, acceptsJSON: true, handler: .waiting { context in
                let app = try context.app()
                let owner = try Validation.owner(context.parameters["owner"] ?? "")
                let body = try context.decode(ActivateRequest.self)
                let id = try Validation.sessionID(body.sessionID, field: "session_id")
                _ = try await sessions.activate(id, owner: owner, app: app)
                return listResponse(try await sessions.sessions(owner: owner, app: app))
            }),
            /// - Remark: HTTP DELETE /v1/owners/{owner}/sessions (openapi.yaml operationId deleteOwnerSessions)
            Route("DELETE", "/v1/owners/{owner}/sessions", operationID: "deleteOwnerSessions", scope: .sessions, handler: .waiting { context in
                let app = try context.app()
                let owner = try Validation.owner(context.parameters["owner"] ?? "")
                let closed = try await sessions.logoutAll(owner: owner, app: app)
                return .json(
                    status: 200,
                    body: ListDTO(sessions: closed.map { SessionDTO(session: $0, validation: .cached) }, activeSessionID: nil).jsonBytes)
            }),
        ]
    }
}

extension RouteContext {
    /// The caller's app (every scoped route has one).
    func app() throws -> App {
        guard let principal else { throw APIError.unauthorized }
        return principal.app
    }

    /// Who is asking, for the audit log: the key (by id) and this request's id.
    func auditStamp() throws -> AuditStamp {
        guard let principal else { throw APIError.unauthorized }
        return AuditStamp(actor: .key(id: principal.key.id), requestID: requestID)
    }

    /// A boolean query flag as openapi.yaml types it: absent or `false` is false, `true` is true, anything else
    /// (an empty value included) is 400.
    func flag(_ name: String) throws -> Bool {
        switch query(name) {
        case nil, "false": return false
        case "true": return true
        default: throw APIError.invalid("\(name) must be true or false.", field: name)
        }
    }
}
