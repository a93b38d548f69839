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
            Route("POST", "/v1/sessions", operationID: "createSession", scope: .sessions, acceptsJSON: true, body: .waiting { context in
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
            Route("GET", "/v1/sessions/{id}", operationID: "getSession", scope: .sessions, cached: { context, pass, hint in
                let (id, app, mode) = try statusRequest(context)
                let body = sessions.cachedStatusBody(id, app: app, mode: mode, pass: pass, hint: hint) {
                    SessionDTO(session: $0, validation: .cached).jsonBytes
                }
                return body.map { .json(status: 200, body: $0) }
            }, cacheHint: { context in
                context.parameters["id"].map(sessions.cacheHint) ?? .unknown
            }, body: .waiting { context in
                let (id, app, mode) = try statusRequest(context)
                guard let answer = try await sessions.status(id, app: app, mode: mode) else {
                    throw SessionError.notFound
                }
                return statusResponse(answer)
            }),
            /// - Remark: HTTP DELETE /v1/sessions/{id} (openapi.yaml operationId deleteSession)
            Route("DELETE", "/v1/sessions/{id}", operationID: "deleteSession", scope: .sessions, body: .waiting { context in
                let app = try context.app()
                let id = try Validation.pathSessionID(context)
                let revoke = try context.flag("revoke")
                guard let (session, revocation) = try await sessions.logout(id, app: app, revoke: revoke) else {
                    throw SessionError.notFound
                }
                return .json(status: 200, body: SessionDTO(session: session, validation: .cached, revocation: revocation).jsonBytes)
            }),
            /// - Remark: HTTP PUT /v1/sessions/{id}/authentication-token (openapi.yaml operationId
            ///   refreshAuthenticationToken)
            Route(
                "PUT", "/v1/sessions/{id}/authentication-token", operationID: "refreshAuthenticationToken", scope: .sessions,
                acceptsJSON: true, body: .waiting { context in try await refreshAuthenticationToken(context, flow: limitedFlow) }),
            /// - Remark: HTTP GET /v1/sessions/{id}/token (openapi.yaml operationId getSessionToken)
            Route("GET", "/v1/sessions/{id}/token", operationID: "getSessionToken", scope: .tokensRead, body: .waiting { context in
                let app = try context.app()
                let id = try Validation.pathSessionID(context)
                guard let (session, token, proof) = try await sessions.token(id, app: app) else {
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

    /// What a status request asks: the session, the caller's app, and the validation mode.
    private static func statusRequest(_ context: RouteContext) throws -> (String, App, SessionService.ValidateMode) {
        let app = try context.app()
        let id = try Validation.pathSessionID(context)
        guard let mode = SessionService.ValidateMode(rawValue: context.query("validate") ?? "auto") else {
            throw APIError.invalid("validate must be auto, always or never.", field: "validate")
        }
        return (id, app, mode)
    }

    private static func statusResponse(_ answer: (Session, SessionService.Validation)) -> Response {
        .json(status: 200, body: SessionDTO(session: answer.0, validation: answer.1).jsonBytes)
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

    private static func listResponse(_ list: (sessions: [Session], activeID: String?)) -> Response {
        .json(status: 200, body: listBody(list))
    }

    private static func listBody(_ list: (sessions: [Session], activeID: String?)) -> [UInt8] {
        ListDTO(sessions: list.sessions.map { SessionDTO(session: $0, validation: .cached) }, activeSessionID: list.activeID)
            .jsonBytes
    }

    /// Whose list: the app and the owner.
    private struct ListKey: Hashable, Sendable {
        let appID: String
        let owner: String
    }

    static func routes(_ services: Services) -> [Route] {
        let sessions = services.sessions
        let listBodies = RenderedBodies<ListKey, CachedList>(limit: 256)
        return [
            /// - Remark: HTTP GET /v1/owners/{owner}/sessions (openapi.yaml operationId listOwnerSessions)
            Route("GET", "/v1/owners/{owner}/sessions", operationID: "listOwnerSessions", scope: .sessions, cached: { context, pass, hint in
                let app = try context.app()
                let owner = try Validation.owner(context.parameters["owner"] ?? "")
                return sessions.cachedSessions(owner: owner, app: app, pass: pass, hint: hint).map { list in
                    let key = ListKey(appID: app.id, owner: owner)
                    return .json(status: 200, body: listBodies.body(key, for: list) { listBody(($0.sessions, $0.activeID)) })
                }
            }, cacheHint: { context in
                guard let app = try? context.app(), let owner = context.parameters["owner"] else { return .unknown }
                return sessions.cacheHint(owner: owner, app: app)
            }, body: .waiting { context in
                let app = try context.app()
                let owner = try Validation.owner(context.parameters["owner"] ?? "")
                return listResponse(try await sessions.sessions(owner: owner, app: app))
            }),
            /// - Remark: HTTP PUT /v1/owners/{owner}/active (openapi.yaml operationId setActiveSession)
            Route("PUT", "/v1/owners/{owner}/active", operationID: "setActiveSession", scope: .sessions, acceptsJSON: true, body: .waiting { context in
                let app = try context.app()
                let owner = try Validation.owner(context.parameters["owner"] ?? "")
                let body = try context.decode(ActivateRequest.self)
                let id = try Validation.sessionID(body.sessionID, field: "session_id")
                _ = try await sessions.activate(id, owner: owner, app: app)
                return listResponse(try await sessions.sessions(owner: owner, app: app))
            }),
            /// - Remark: HTTP DELETE /v1/owners/{owner}/sessions (openapi.yaml operationId deleteOwnerSessions)
            Route("DELETE", "/v1/owners/{owner}/sessions", operationID: "deleteOwnerSessions", scope: .sessions, body: .waiting { context in
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
