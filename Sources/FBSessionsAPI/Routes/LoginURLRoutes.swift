import FBSessionsCore
import HTTPServer
import Support

/// `POST /v1/login-urls`: the Facebook login dialog URL with a single-use state.
enum LoginURLRoutes {
    /// The body, checked strictly: unknown fields, wrong types and bad values are 400 `invalid_request` naming the
    /// field. Only the redirect URI's registration is left to the flow (400 `redirect_uri_not_allowed`).
    ///
    /// `config_id` (Facebook Login for Business) replaces `scopes`: a `config_id` string beside any `scopes` key is
    /// refused, naming `scopes`, even when `scopes` is empty or null, so that a caller never believes its scopes were
    /// asked for (docs/login-flow.md, "Facebook Login for Business"). `config_id: null` is no configuration.
    struct Body: Decodable {
        let owner: String
        let redirectURI: String
        let scopes: [String]
        let configID: String?
        let authType: AuthType?
        let slot: Int?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case owner, scopes, slot
            case redirectURI = "redirect_uri"
            case configID = "config_id"
            case authType = "auth_type"
        }

        /// The most scopes one login URL asks for; each is a permission name (lower-case letters, digits, `_`).
        static let maxScopes = 64

        init(from decoder: any Decoder) throws {
            try AnyKey.rejectUnknownFields(in: decoder, known: CodingKeys.self)
            let fields = try decoder.container(keyedBy: CodingKeys.self)
            owner = try fields.decode(String.self, forKey: .owner)
            redirectURI = try fields.decode(String.self, forKey: .redirectURI)
            guard (1...2048).contains(redirectURI.utf8.count) else {
                throw APIError.invalid("redirect_uri must be 1 to 2048 bytes.", field: "redirect_uri")
            }
            var scopes: [String] = []
            for scope in try fields.decodeIfPresent([String].self, forKey: .scopes) ?? [] where !scopes.contains(scope) {
                guard (1...64).contains(scope.utf8.count),
                    scope.utf8.allSatisfy({ (97...122).contains($0) || (48...57).contains($0) || $0 == 95 })
                else {
                    throw APIError.invalid("Each scope is a permission name such as email or user_link.", field: "scopes")
                }
                scopes.append(scope)
            }
            guard scopes.count <= Self.maxScopes else {
                throw APIError.invalid("At most \(Self.maxScopes) scopes.", field: "scopes")
            }
            self.scopes = scopes
            if fields.contains(.configID), try !fields.decodeNil(forKey: .configID) {
                guard let text = try? fields.decode(String.self, forKey: .configID) else {
                    throw APIError.invalid(
                        "config_id must be a string of digits (a Facebook Login for Business configuration id).",
                        field: "config_id")
                }
                guard LoginFlow.isWellFormedConfigID(text) else {
                    throw APIError.invalid(
                        "config_id must be 1 to 32 digits (a Facebook Login for Business configuration id).",
                        field: "config_id")
                }
                guard !fields.contains(.scopes) else {
                    throw APIError.invalid(
                        "Give scopes or config_id, not both: a Login for Business configuration fixes the permissions.",
                        field: "scopes")
                }
                configID = text
            } else {
                configID = nil
            }
            if let text = try fields.decodeIfPresent(String.self, forKey: .authType) {
                guard let authType = AuthType(rawValue: text) else {
                    throw APIError.invalid(
                        "auth_type must be rerequest, reauthorize, reauthenticate or null.", field: "auth_type")
                }
                self.authType = authType
            } else {
                authType = nil
            }
            slot = try fields.decodeIfPresent(Int.self, forKey: .slot)
        }
    }

    struct LoginURLDTO: Encodable {
        let made: LoginFlow.LoginURL

        enum CodingKeys: String, CodingKey {
            case url, state
            case expiresAt = "expires_at"
            case reviewRequired = "review_required"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(made.url, forKey: .url)
            try container.encode(made.state, forKey: .state)
            try container.encode(RFC3339.string(from: made.expiresAt), forKey: .expiresAt)
            try container.encode(made.reviewRequired, forKey: .reviewRequired)
        }
    }

    static func routes(_ services: Services) -> [Route] {
        let flow = services.loginFlow
        let maxSlots = services.maxSlots
        return [
            /// - Remark: HTTP POST /v1/login-urls (openapi.yaml operationId createLoginURL)
            Route("POST", "/v1/login-urls", operationID: "createLoginURL", scope: .sessions, acceptsJSON: true, handler: .waiting { context in
                let app = try context.app()
                let body = try context.decode(Body.self)
                let owner = try Validation.owner(body.owner)
                if let slot = body.slot, !(0..<maxSlots).contains(slot) {
                    throw APIError.invalid("slot must be between 0 and \(maxSlots - 1).", field: "slot")
                }
                guard let flow else { throw APIError.from(ServiceError.databaseUnavailable) }
                let made = try await flow.makeLoginURL(
                    app: app,
                    LoginFlow.URLRequest(
                        owner: owner, redirectURI: body.redirectURI, scopes: body.scopes, configID: body.configID,
                        authType: body.authType, slot: body.slot))
                return try JSONResponse.make(201, LoginURLDTO(made: made), headers: ["Cache-Control": "no-store"])
            }),
        ]
    }
}
