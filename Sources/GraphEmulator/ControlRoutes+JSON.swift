/// JSON shapes of the control API's answers (snake_case keys; absent values are null).
extension ControlRoutes {
    static func json(_ app: EmulatedApp) -> JSONValue {
        .object([
            ("id", .string(app.id)), ("secret", .string(app.secret)), ("name", .string(app.name)),
            ("require_proof", .bool(app.requiresProof)), ("client_token", .string(app.clientToken)),
            ("redirect_uris", .strings(app.redirectURIs)), ("developer_ids", .strings(app.developerIDs)),
            ("app_token", .string(app.appAccessToken)),
        ])
    }

    static func json(_ user: EmulatedUser) -> JSONValue {
        func optional(_ text: String?) -> JSONValue { text.map { .string($0) } ?? .null }
        return .object([
            ("id", .string(user.id)), ("name", .string(user.displayName)), ("first_name", optional(user.firstName)),
            ("middle_name", optional(user.middleName)), ("last_name", optional(user.lastName)),
            ("email", optional(user.email)), ("link", optional(user.link)), ("has_picture", .bool(user.hasPicture)),
        ])
    }

    static func json(_ token: IssuedToken, now: Int64) -> JSONValue {
        .object([
            ("access_token", .string(token.accessToken)), ("app_id", .string(token.appID)),
            ("user_id", token.userID.map { .string($0) } ?? .null), ("type", .string(token.kind.rawValue)),
            ("long_lived", .bool(token.isLongLived)), ("issued_at", .int(token.issuedAt)),
            ("expires_at", .int(token.expiresAt)), ("expires_in", token.expiresIn(now: now).map { .int($0) } ?? .null),
            ("data_access_expires_at", .int(token.dataAccessExpiresAt)), ("granted", .strings(token.granted)),
            ("declined", .strings(token.declined)), ("expired", .strings(token.expired)),
            ("invalidation", token.invalidation.map { .int(Int64($0.rawValue)) } ?? .null),
            ("page_id", token.pageID.map { .string($0) } ?? .null), ("assets", assets(token.targets)),
        ])
    }

    /// Asset ids per permission, keys sorted.
    static func assets(_ targets: [String: [String]]) -> JSONValue {
        .object(targets.keys.sorted().map { ($0, .strings(targets[$0] ?? [])) })
    }

    static func json(_ configuration: BusinessConfiguration) -> JSONValue {
        .object([
            ("id", .string(configuration.id)), ("app_id", .string(configuration.appID)),
            ("permissions", .strings(configuration.permissions)), ("assets", assets(configuration.assets)),
            ("token_type", .string(configuration.tokenKind == .systemUser ? "system_user" : "user")),
        ])
    }

    static func json(_ seed: DemoSeed) -> JSONValue {
        .object([
            ("app", json(seed.app)), ("users", .array(seed.users.map(json))),
            ("instructions", .string(seed.instructions)),
        ])
    }
}
